// FileWatch: a wait that ends on a stop signal, on a change of one file (by its name in its directory, or
// a ConfigMap's "..data" swap beside it), or when its time passes.
#include "util/file_watch.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <filesystem>

#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk {
namespace {

class FileWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_tmp.path().empty());
    // SIGUSR1 stands for the stop signals: blocked here, as block_stop_signals blocks them.
    sigemptyset(&m_stop);
    sigaddset(&m_stop, SIGUSR1);
    ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &m_stop, &m_saved), 0);
    m_file = m_tmp.path() + "/config.yaml";
    ASSERT_TRUE(write_file_atomic(m_file, "a", 0644));
  }
  void TearDown() override { ::pthread_sigmask(SIG_SETMASK, &m_saved, nullptr); }

  FileWatch open() const {
    auto watch = FileWatch::open(m_file, m_stop);
    EXPECT_TRUE(watch) << watch.error().message;
    return std::move(watch.value());
  }
  static FileWatch::Wake wait(FileWatch& watch, unsigned seconds) {
    auto wake = watch.wait(seconds);
    EXPECT_TRUE(wake) << wake.error().message;
    return wake.value_or(FileWatch::Wake::timeout);
  }

  test::TempDir m_tmp{"gpuctk-file-watch"};
  sigset_t m_stop{};
  sigset_t m_saved{};
  std::string m_file;
};

TEST_F(FileWatchTest, AFileReplacedWrittenOrRemovedWakesOnce) {
  FileWatch watch = open();
  ASSERT_TRUE(write_file_atomic(m_file, "b", 0644));  // a temporary file renamed over it
  ASSERT_TRUE(write_file_atomic(m_file, "c", 0644));
  EXPECT_EQ(wait(watch, 3600), FileWatch::Wake::changed);
  EXPECT_EQ(wait(watch, 1), FileWatch::Wake::timeout) << "both writes woke it once";
  std::filesystem::remove(m_file);
  EXPECT_EQ(wait(watch, 3600), FileWatch::Wake::changed);
}

TEST_F(FileWatchTest, AConfigMapsDataSwapWakes) {
  std::filesystem::create_directory(m_tmp.path() + "/..v2");
  std::filesystem::create_directory_symlink("..v2", m_tmp.path() + "/..data_tmp");
  FileWatch watch = open();
  std::filesystem::rename(m_tmp.path() + "/..data_tmp", m_tmp.path() + "/..data");
  EXPECT_EQ(wait(watch, 3600), FileWatch::Wake::changed);
}

TEST_F(FileWatchTest, OtherFilesOfTheFolderDoNot) {
  FileWatch watch = open();
  ASSERT_TRUE(write_file_atomic(m_tmp.path() + "/other.yaml", "x", 0644));
  EXPECT_EQ(wait(watch, 1), FileWatch::Wake::timeout);
}

TEST_F(FileWatchTest, AStopSignalWinsOverAChange) {
  FileWatch watch = open();
  ASSERT_TRUE(write_file_atomic(m_file, "b", 0644));
  ASSERT_EQ(::pthread_kill(::pthread_self(), SIGUSR1), 0);
  EXPECT_EQ(wait(watch, 3600), FileWatch::Wake::stopped);
  EXPECT_EQ(wait(watch, 3600), FileWatch::Wake::changed) << "the change is still there";
}

TEST_F(FileWatchTest, AFolderRemovedAndMadeAgainIsWatchedAgain) {
  FileWatch watch = open();
  std::filesystem::remove_all(m_tmp.path());
  EXPECT_EQ(wait(watch, 3600), FileWatch::Wake::changed);
  std::filesystem::create_directory(m_tmp.path());
  EXPECT_EQ(wait(watch, 3600), FileWatch::Wake::changed);
  ASSERT_TRUE(write_file_atomic(m_file, "b", 0644));
  EXPECT_EQ(wait(watch, 3600), FileWatch::Wake::changed);
}

TEST_F(FileWatchTest, AFolderThatIsNotThereIsAnError) {
  const auto watch = FileWatch::open(m_tmp.path() + "/none/config.yaml", m_stop);
  ASSERT_FALSE(watch);
  EXPECT_EQ(watch.error().message, "watch " + m_tmp.path() + "/none (inotify): No such file or directory");
}

}  // namespace
}  // namespace gpuctk
