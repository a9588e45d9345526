#include "oci/runtime_lookup.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "support/temp_dir_test.hpp"
#include "util/file.hpp"

namespace gpuctk::oci {
namespace {

namespace fs = std::filesystem;

// A temporary directory with executables, and the test's working directory inside it (restored after).
class OciRuntimeLookup : public test::TempDirTest {
 protected:
  OciRuntimeLookup() : TempDirTest("gpuctk-lookup") {}
  void SetUpDir() override {
    m_old_cwd = fs::current_path();
    fs::create_directories(m_dir + "/bundle/bin");
    fs::create_directories(m_dir + "/usr/bin");
    fs::current_path(m_dir + "/bundle");
  }
  void TearDown() override { fs::current_path(m_old_cwd); }
  void executable(const std::string& path) { ASSERT_TRUE(write_file_atomic(path, "#!/bin/sh\n", 0755)); }
  std::string find(const std::string& path_env) {
    const auto found = find_runtime({"runc"}, path_env, "/nonexistent/gpuctk");
    return found ? *found : found.error().message;
  }

  fs::path m_old_cwd;
};

TEST_F(OciRuntimeLookup, EmptyAndRelativePathElementsNeverMeanTheWorkingDirectory) {
  // The shim's working directory is the bundle: a runc planted there must never run.
  executable(m_dir + "/bundle/runc");
  executable(m_dir + "/bundle/bin/runc");
  for (const std::string path :
       {":", "::", ":/nonexistent", "/nonexistent:", "/nonexistent::/x", ".", "bin", "./bin"}) {
    EXPECT_EQ(find(path), "no low-level runtime found (tried runc on PATH " + path + ")") << "PATH=" << path;
  }
  executable(m_dir + "/usr/bin/runc");
  EXPECT_EQ(find(":" + m_dir + "/usr/bin:"), m_dir + "/usr/bin/runc");
  EXPECT_EQ(find("bin::" + m_dir + "/usr/bin/"), m_dir + "/usr/bin/runc");
}

TEST_F(OciRuntimeLookup, SearchDirectoriesAreTheAbsoluteOnes) {
  const auto dirs = runtime_search_dirs(":/a::b:./c:/d/:");
  EXPECT_EQ(dirs, (std::vector<std::string_view>{"/a", "/d/"}));
}

TEST_F(OciRuntimeLookup, ConfiguredPathsMustBeAbsoluteAndNotGpuctkOrADirectory) {
  executable(m_dir + "/bundle/bin/runc");
  executable(m_dir + "/usr/bin/crun");
  fs::create_directories(m_dir + "/usr/bin/runc");  // a directory passes access(X_OK)
  const std::string crun = m_dir + "/usr/bin/crun";
  EXPECT_EQ(find_runtime({"bin/runc", "runc", crun}, m_dir + "/usr/bin", "/x").value(), crun);
  const auto self = find_runtime({crun}, "", crun);
  ASSERT_FALSE(self);
  EXPECT_EQ(self.error().message, "no low-level runtime found (tried " + crun + " on PATH " +
                                      std::string(k_default_search_path) + ")");
}

}  // namespace
}  // namespace gpuctk::oci
