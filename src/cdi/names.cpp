#include "cdi/names.hpp"

#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alnum(char c) {
  return is_letter(c) || is_digit(c);
}

// The shape shared by vendors, classes and device names; they differ in the first character and in
// the punctuation allowed inside.
struct NameRule {
  std::string_view noun;     // "vendor", "class", "device name"
  bool digit_first;          // may start with a digit
  std::string_view middle;   // punctuation allowed after the first and before the last character
  std::string_view allowed;  // `middle` in words, for messages
  bool single_char_ok;       // false: released CDI libraries (<= v1.1.0) crash on one character
};

// Vendor and class: letter first (SPEC.md wants a DNS name, the library checks only this much).
constexpr NameRule k_vendor_rule{"vendor", false, "_-.", R"("_", "-" and ".")", false};
constexpr NameRule k_class_rule{"class", false, "_-.", R"("_", "-" and ".")", false};
// Device names: ":" is allowed (MIG-style "0:1"), a digit first needs cdiVersion 0.5.0.
constexpr NameRule k_device_rule{"device name", true, "_-.:", R"("_", "-", "." and ":")", true};

Result<void> check_name(const NameRule& rule, std::string_view text) {
  const std::string subject = std::string(rule.noun) + " " + quote(text);
  if (text.empty()) {
    return fail("empty " + std::string(rule.noun));
  }
  const char first = text.front();
  if (!(is_letter(first) || (rule.digit_first && is_digit(first)))) {
    return fail(subject +
                (rule.digit_first ? " must start with a letter or digit" : " must start with a letter"));
  }
  for (const char c : text.substr(1)) {
    if (!is_alnum(c) && rule.middle.find(c) == std::string_view::npos) {
      return fail(subject + " contains " + quote(std::string_view(&c, 1)) + "; only letters, digits, " +
                  std::string(rule.allowed) + " are allowed");
    }
  }
  if (!is_alnum(text.back())) {
    return fail(subject + " must end with a letter or digit");
  }
  if (text.size() == 1 && !rule.single_char_ok) {
    return fail(subject + " is a single character, which crashes released CDI libraries (up to v1.1.0); " +
                "use at least two characters");
  }
  return {};
}

}  // namespace

Result<void> check_vendor(std::string_view vendor) {
  return check_name(k_vendor_rule, vendor);
}
Result<void> check_class(std::string_view klass) {
  return check_name(k_class_rule, klass);
}
Result<void> check_device_name(std::string_view name) {
  return check_name(k_device_rule, name);
}

std::pair<std::string_view, std::string_view> split_kind(std::string_view kind) {
  const auto slash = kind.find('/');
  if (slash == std::string_view::npos) {
    return {};
  }
  return {kind.substr(0, slash), kind.substr(slash + 1)};
}

std::string QualifiedName::kind() const {
  return vendor + "/" + klass;
}

std::string QualifiedName::str() const {
  return vendor + "/" + klass + "=" + name;
}

Result<QualifiedName> parse_qualified_name(std::string_view text) {
  const auto invalid = [&](std::string_view why) {
    return fail("invalid device name " + quote(text) + ": " + std::string(why));
  };
  if (text.empty()) {
    return invalid("empty (want vendor/class=name)");
  }
  if (text.front() == '/') {
    return invalid("a path, not a CDI device (want vendor/class=name)");
  }
  const auto equals = text.find('=');
  if (equals == std::string_view::npos) {
    return invalid(R"(missing "=" (want vendor/class=name))");
  }
  const std::string_view kind = text.substr(0, equals);
  if (kind.find('/') == std::string_view::npos) {
    return invalid(R"(missing "/" (want vendor/class=name))");
  }
  const auto [vendor, klass] = split_kind(kind);
  QualifiedName name{std::string(vendor), std::string(klass), std::string(text.substr(equals + 1))};
  for (const auto& check :
       {check_vendor(name.vendor), check_class(name.klass), check_device_name(name.name)}) {
    if (!check) {
      return invalid(check.error().message);
    }
  }
  return name;
}

}  // namespace gpuctk::cdi
