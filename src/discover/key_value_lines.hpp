#pragma once
// The "Key: value" line format shared by the NVIDIA driver's /proc files (gpus/<bus>/information,
// params, capability files). Internal to discover/.

#include <cstddef>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::discover {

struct KeyValueLine {
  size_t line = 0;         // 1-based line number, for error messages
  std::string_view key;    // text before the first ':', trimmed
  std::string_view value;  // text after it, trimmed of spaces, tabs and CR
};

// The lines of `text` split at their first ':'. Blank lines are skipped; a non-blank line without a
// ':' or with an empty key -> error "line <n>: expected \"Key: value\", got <quoted line>".
// Duplicate keys are returned as they are: callers decide.
Result<std::vector<KeyValueLine>> parse_key_value_lines(std::string_view text);

}  // namespace gpuctk::discover
