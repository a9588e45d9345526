#pragma once
// Golden files: what a test produces, compared byte for byte with a file under tests/golden/. Paths that
// depend on where a fixture was made are replaced first (the fixture root by "@ROOT@").
// GPUCTK_UPDATE_GOLDEN=1 rewrites a golden file that differs from what the test produced, and the test
// still fails: read the diff, then run again.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/file.hpp"

namespace gpuctk::test {

// `text` with every `from` replaced by `to`.
inline std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size()) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

// Success when `text` equals tests/golden/<relative> byte for byte; otherwise a failure naming the file
// and the first difference. With GPUCTK_UPDATE_GOLDEN=1 a file that differs is rewritten and the test
// still fails (a run that rewrote a golden file is never green).
inline ::testing::AssertionResult matches_golden_file(const std::string& golden, const std::string& text) {
  auto expected = read_file(golden);
  if (const char* update = std::getenv("GPUCTK_UPDATE_GOLDEN");
      update != nullptr && update == std::string("1") && (!expected || *expected != text)) {
    // Rewritten, and still a failure: a run that changed a golden file must not pass.
    std::filesystem::create_directories(std::filesystem::path(golden).parent_path());
    if (auto written = write_file_atomic(golden, text, 0644); !written) {
      return ::testing::AssertionFailure() << written.error().message;
    }
    return ::testing::AssertionFailure()
           << "rewrote " << golden << ": read its diff, then run again without GPUCTK_UPDATE_GOLDEN";
  }
  if (!expected) {
    return ::testing::AssertionFailure() << expected.error().message;
  }
  if (text != *expected) {
    // The first line that differs, so the failure says where.
    size_t line = 1;
    size_t at = 0;
    for (; at < text.size() && at < expected->size() && text[at] == (*expected)[at]; ++at) {
      line += text[at] == '\n' ? 1 : 0;
    }
    const auto line_at = [](const std::string& s, size_t pos) {
      const size_t begin = pos == 0 ? 0 : s.rfind('\n', pos - 1) + 1;  // npos + 1 == 0
      return s.substr(begin, s.find('\n', begin) - begin);
    };
    const size_t column = at - (at == 0 ? 0 : text.rfind('\n', at - 1) + 1) + 1;  // npos + 1 == 0
    return ::testing::AssertionFailure()
           << "differs from " << golden << " at line " << line << ", column " << column
           << ":\n  golden: " << line_at(*expected, at) << "\n  actual: " << line_at(text, at)
           << "\n(GPUCTK_UPDATE_GOLDEN=1 rewrites it; read the diff)";
  }
  return ::testing::AssertionSuccess();
}

// matches_golden_file of tests/golden/<relative>.
inline ::testing::AssertionResult matches_golden(const std::string& relative, const std::string& text) {
  return matches_golden_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/golden/" + relative, text);
}

}  // namespace gpuctk::test
