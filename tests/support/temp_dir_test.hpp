#pragma once
// The base of the tests whose fixture is a scratch directory (support/temp_dir.hpp): SetUp checks that
// the directory was made and names it m_dir, then runs the test's own SetUpDir.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "support/temp_dir.hpp"

namespace gpuctk::test {

class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string_view prefix = "gpuctk-cdi",
                       const std::filesystem::path& parent = std::filesystem::temp_directory_path())
      : m_tmp(prefix, parent) {}

  void SetUp() final {
    ASSERT_FALSE(m_tmp.path().empty());
    m_dir = m_tmp.path();
    SetUpDir();
  }
  virtual void SetUpDir() {}

  TempDir m_tmp;
  std::string m_dir;  // m_tmp's path
};

}  // namespace gpuctk::test
