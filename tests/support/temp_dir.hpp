#pragma once
// A temporary directory for tests, removed with everything in it on destruction. Every test that needs a
// scratch directory uses this one (a fixture holds it as a member, so the directory outlives TearDown).

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace gpuctk::test {

class TempDir {
 public:
  // Creates <parent>/<prefix>-XXXXXX. The parent is $TMPDIR (or /tmp) unless a test needs a fixed one;
  // the prefix names the test in a directory left behind by a crash.
  explicit TempDir(std::string_view prefix = "gpuctk-cdi",
                   const std::filesystem::path& parent = std::filesystem::temp_directory_path()) {
    std::string templ = (parent / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(templ.data()) != nullptr) {
      m_path = templ;
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    if (!m_path.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(m_path, ec);
    }
  }

  // The directory; empty if it could not be created (check with ASSERT_FALSE(path().empty())).
  [[nodiscard]] const std::string& path() const { return m_path; }

  // Writes `content` to `relative` (creating parent directories); returns the full path.
  std::string write(std::string_view relative, std::string_view content) const {
    const std::filesystem::path file = std::filesystem::path(m_path) / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
    return file.string();
  }

 private:
  std::string m_path;
};

}  // namespace gpuctk::test
