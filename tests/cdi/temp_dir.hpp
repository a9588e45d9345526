#pragma once
// A temporary directory for tests, removed with everything in it on destruction.

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace gpuctk::test {

class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "gpuctk-cdi-XXXXXX").string();
    if (::mkdtemp(templ.data()) != nullptr) {
      m_path = templ;
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }

  // The directory; empty if it could not be created.
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
