#include "ldcache/entry_arg.hpp"

#include <algorithm>
#include <limits>

#include "rootfs/in_root.hpp"
#include "util/strings.hpp"

namespace gpuctk::ldcache {

namespace {

// The longest SONAME or path accepted (PATH_MAX, as the cache reader bounds its strings).
constexpr size_t k_max_fact_field = 4096;

// "0x" and the lower-case hex digits of `value`, as ldconfig's headers print flags.
std::string hex(uint32_t value) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), k_digits[value & 0xfu]);
    value >>= 4;
  } while (value != 0);
  return "0x" + text;
}

Result<uint32_t> parse_u32_hex(std::string_view text, std::string_view what) {
  const auto value = parse_hex(text);
  if (!value || *value > std::numeric_limits<uint32_t>::max()) {
    return fail(std::string(what) + " " + quote(text) + " is not a 32-bit hex number");
  }
  return static_cast<uint32_t>(*value);
}

// The value's fields, unprefixed errors.
Result<LdCacheFact> parse_fields(std::string_view value) {
  const auto first = value.find(':');
  const auto second = first == std::string_view::npos ? first : value.find(':', first + 1);
  const auto third = second == std::string_view::npos ? second : value.find(':', second + 1);
  if (third == std::string_view::npos) {
    return fail("expected FLAGS:OSVERSION:SONAME:PATH");
  }
  LdCacheFact fact;
  GPUCTK_TRY_ASSIGN(fact.flags, parse_u32_hex(value.substr(0, first), "FLAGS"));
  GPUCTK_TRY_ASSIGN(fact.osversion, parse_u32_hex(value.substr(first + 1, second - first - 1), "OSVERSION"));
  fact.soname = std::string(value.substr(second + 1, third - second - 1));
  fact.path = std::string(value.substr(third + 1));
  if (fact.soname.empty() || fact.soname == "." || fact.soname == ".." ||
      fact.soname.find('/') != std::string::npos || fact.soname.size() > k_max_fact_field) {
    return fail("SONAME " + quote(fact.soname) + " is not a file name");
  }
  if (fact.path.size() > k_max_fact_field) {
    return fail("PATH is longer than " + std::to_string(k_max_fact_field) + " bytes");
  }
  GPUCTK_TRY(rootfs::split_container_path(fact.path));
  if (value.find_first_of(std::string_view("\n\0", 2)) != std::string_view::npos) {
    return fail("contains a newline or a NUL byte");
  }
  return fact;
}

}  // namespace

std::string entry_arg(uint32_t flags, uint32_t osversion, std::string_view soname, std::string_view path) {
  return hex(flags) + ":" + hex(osversion) + ":" + std::string(soname) + ":" + std::string(path);
}

Result<LdCacheFact> parse_entry_arg(std::string_view value) {
  auto fact = parse_fields(value);
  if (!fact) {
    return fail_with("--ld-cache-entry " + quote(value), fact.error());
  }
  return fact;
}

Result<std::vector<LdCacheFact>> parse_ld_cache_facts(const std::vector<std::string>& values) {
  if (values.size() > k_max_facts) {
    return fail("--ld-cache-entry: more than " + std::to_string(k_max_facts) + " values");
  }
  std::vector<LdCacheFact> facts;
  for (const auto& value : values) {
    GPUCTK_TRY_ASSIGN(auto fact, parse_entry_arg(value));
    if (std::ranges::find(facts, fact) == facts.end()) {
      facts.push_back(std::move(fact));
    }
  }
  return facts;
}

}  // namespace gpuctk::ldcache
