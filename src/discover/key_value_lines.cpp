#include "discover/key_value_lines.hpp"

#include <string>

#include "util/strings.hpp"

namespace gpuctk::discover {

Result<std::vector<KeyValueLine>> parse_key_value_lines(std::string_view text) {
  std::vector<KeyValueLine> out;
  const auto lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto line = trim(lines[i]);
    if (line.empty()) {
      continue;
    }
    const auto colon = line.find(':');
    const auto key = colon == std::string_view::npos ? std::string_view() : trim(line.substr(0, colon));
    if (key.empty()) {
      return fail("line " + std::to_string(i + 1) + ": expected \"Key: value\", got " + quote(line));
    }
    out.push_back({.line = i + 1, .key = key, .value = trim(line.substr(colon + 1))});
  }
  return out;
}

}  // namespace gpuctk::discover
