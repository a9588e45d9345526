#include "discover/pci_bus_id.hpp"

#include <cstdint>
#include <optional>

#include "util/strings.hpp"

namespace gpuctk::discover {
namespace {

// The value of `digits` as hex, if it is 1 to `max_digits` hex digits and nothing else.
std::optional<uint32_t> parse_hex(std::string_view digits, size_t max_digits) {
  if (digits.empty() || digits.size() > max_digits) {
    return std::nullopt;
  }
  uint32_t value = 0;
  for (const char c : digits) {
    uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    value = (value << 4) | digit;
  }
  return value;
}

// `value` as lower-case hex, zero-padded to at least `width` digits.
std::string to_hex(uint32_t value, size_t width) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), k_hex[value & 0xf]);
    value >>= 4;
  } while (value != 0);
  if (out.size() < width) {
    out.insert(0, width - out.size(), '0');
  }
  return out;
}

}  // namespace

Result<std::string> parse_pci_bus_id(std::string_view text) {
  const auto invalid = [&](std::string_view reason) {
    return fail("invalid PCI bus id " + quote(text) + ": " + std::string(reason));
  };
  const auto parts = split(text, ':');
  if (parts.size() != 2 && parts.size() != 3) {
    return invalid("expected [domain:]bus:device.function, like 0000:07:00.0");
  }
  const bool has_domain = parts.size() == 3;
  const auto domain = has_domain ? parse_hex(parts[0], 8) : std::optional<uint32_t>(0);
  if (!domain) {
    return invalid("domain must be 1 to 8 hex digits");
  }
  const std::string_view bus_text = parts[parts.size() - 2];
  if (bus_text.size() != 2 || !parse_hex(bus_text, 2)) {
    return invalid("bus must be 2 hex digits");
  }
  const std::string_view slot = parts.back();
  const auto dot = slot.find('.');
  if (dot == std::string_view::npos) {
    return invalid("expected device.function after the bus");
  }
  const auto device = slot.substr(0, dot).size() == 2 ? parse_hex(slot.substr(0, dot), 2) : std::nullopt;
  if (!device || *device > 0x1f) {
    return invalid("device must be 2 hex digits, at most 1f");
  }
  const auto function = parse_hex(slot.substr(dot + 1), 1);
  if (!function || *function > 7) {
    return invalid("function must be 1 digit, 0 to 7");
  }
  return to_hex(*domain, 4) + ":" + to_hex(*parse_hex(bus_text, 2), 2) + ":" + to_hex(*device, 2) + "." +
         to_hex(*function, 1);
}

}  // namespace gpuctk::discover
