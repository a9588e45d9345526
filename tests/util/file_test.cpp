#include "util/file.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace gpuctk {
namespace {

namespace fs = std::filesystem;

class FileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "gpuctk-file-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    m_dir = templ;
  }
  void TearDown() override { fs::remove_all(m_dir); }

  [[nodiscard]] size_t entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(m_dir), fs::directory_iterator{}));
  }

  fs::path m_dir;
};

TEST_F(FileTest, ReadFileNamesThePathOnError) {
  const auto missing = (m_dir / "nope").string();
  const auto result = read_file(missing);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message, "read " + missing + ": No such file or directory");
}

TEST_F(FileTest, AtomicWriteCreatesFileWithModeAndNoLeftovers) {
  const auto path = (m_dir / "spec.yaml").string();
  ::umask(022);
  ASSERT_TRUE(write_file_atomic(path, "hello\n", 0644));
  EXPECT_EQ(read_file(path).value(), "hello\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FileTest, AtomicWriteReplacesWholeFileAndSetsModeEvenUnderStrictUmask) {
  const auto path = (m_dir / "config.json").string();
  ASSERT_TRUE(write_file_atomic(path, std::string(100000, 'a'), 0600));
  const mode_t old_mask = ::umask(077);
  ASSERT_TRUE(write_file_atomic(path, "short", 0644));
  ::umask(old_mask);
  EXPECT_EQ(read_file(path).value(), "short");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FileTest, AtomicWriteFailureLeavesOldFileAndNoTemporary) {
  // Renaming a file over a non-empty directory fails after the temporary file was written.
  const auto target = m_dir / "taken";
  fs::create_directory(target);
  std::ofstream(target / "keep") << "x";
  const auto result = write_file_atomic(target.string(), "data", 0644);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("write " + target.string() + ": rename: "), std::string::npos)
      << result.error().message;
  EXPECT_TRUE(fs::is_directory(target));
  EXPECT_EQ(entries(), 1u);
}

TEST_F(FileTest, AtomicWriteIntoMissingDirectoryNamesTheDirectory) {
  const auto path = (m_dir / "missing" / "x.yaml").string();
  const auto result = write_file_atomic(path, "data", 0644);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            "write " + path + ": create temporary file in " + (m_dir / "missing").string() +
                ": No such file or directory");
}

}  // namespace
}  // namespace gpuctk
