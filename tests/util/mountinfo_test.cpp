// util/mountinfo: the one parser of /proc/<pid>/mountinfo, on lines as the kernel writes them.

#include "util/mountinfo.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace gpuctk {
namespace {

std::string error_of(std::string_view text) {
  auto parsed = parse_mountinfo(text, "/proc/self/mountinfo");
  return parsed ? "ok" : parsed.error().message;
}

TEST(MountInfo, ParsesTheFieldsAroundOptionalOnes) {
  const auto mounts = parse_mountinfo(
      "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
      "36 25 0:31 /kubepods /sys/fs/cgroup/devices rw,nosuid master:9 - cgroup cgroup rw,devices\n"
      "\n"
      "41 25 0:35 / /sys/fs/cgroup/unified rw shared:7 master:3 propagate_from:2 - cgroup2 cgroup2 rw\n"
      "50 22 0:40 / /run/a\\040b\\011c\\134d rw - tmpfs tmp\\040fs rw,size=10k",
      "/proc/self/mountinfo");
  ASSERT_TRUE(mounts) << mounts.error().message;
  ASSERT_EQ(mounts->size(), 4U);
  EXPECT_EQ((*mounts)[0], (MountInfo{22, 1, "/", "/proc", "12", "proc", "rw"}));
  EXPECT_EQ((*mounts)[1],
            (MountInfo{36, 25, "/kubepods", "/sys/fs/cgroup/devices", "", "cgroup", "rw,devices"}));
  EXPECT_EQ((*mounts)[2], (MountInfo{41, 25, "/", "/sys/fs/cgroup/unified", "7", "cgroup2", "rw"}));
  EXPECT_EQ((*mounts)[3], (MountInfo{50, 22, "/", "/run/a b\tc\\d", "", "tmpfs", "rw,size=10k"}));
}

TEST(MountInfo, UnescapesOnlyThreeOctalDigits) {
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"a\\040b", "a b"},
           {"a\\012b", "a\nb"},
           {"\\134\\134", "\\\\"},
           // Not an escape: fewer than three digits, a non-octal digit, the end of the field.
           {"a\\04", "a\\04"},
           {"a\\12x", "a\\12x"},
           {"a\\089", "a\\089"},
           {"a\\", "a\\"},
       }) {
    EXPECT_EQ(unescape_mountinfo(in), want) << in;
  }
}

TEST(MountInfo, MalformedLinesAreErrorsNamingTheLine) {
  EXPECT_EQ(error_of("22 1 0:21 / /proc rw - proc proc rw\ngarbage\n"),
            "/proc/self/mountinfo line 2: not a mountinfo line: \"garbage\"");
  EXPECT_EQ(
      error_of("36 31 0:33 / /sys/fs/cgroup/devices rw cgroup cgroup rw,devices\n"),
      "/proc/self/mountinfo line 1: not a mountinfo line: \"36 31 0:33 / /sys/fs/cgroup/devices rw cgroup "
      "cgroup rw,devices\"");
  EXPECT_EQ(error_of("36 31 0:33 / /x rw - cgroup cgroup\n"),
            "/proc/self/mountinfo line 1: not a mountinfo line: \"36 31 0:33 / /x rw - cgroup cgroup\"");
  EXPECT_EQ(error_of("22 1 0:21 / /proc rw -  proc rw\n"),
            "/proc/self/mountinfo line 1: not a mountinfo line: \"22 1 0:21 / /proc rw -  proc rw\"");
  EXPECT_EQ(error_of("22 1 0:21  /proc rw - proc proc rw\n"),
            "/proc/self/mountinfo line 1: not a mountinfo line: \"22 1 0:21  /proc rw - proc proc rw\"");
  EXPECT_EQ(error_of("x22 1 0:21 / /proc rw - proc proc rw\n"),
            "/proc/self/mountinfo line 1: bad mount id in \"x22 1 0:21 / /proc rw - proc proc rw\"");
  EXPECT_EQ(error_of("22 1x 0:21 / /proc rw - proc proc rw\n"),
            "/proc/self/mountinfo line 1: bad mount id in \"22 1x 0:21 / /proc rw - proc proc rw\"");
  EXPECT_EQ(error_of("22 1 0:21 / /a\\nb rw - proc proc\x01 rw\n"), "ok");  // quoted only in errors
  EXPECT_EQ(error_of(""), "ok");
  EXPECT_EQ(error_of("\n\n"), "ok");
}

TEST(MountInfo, InputIsBounded) {
  const std::string line = "22 1 0:21 / /" + std::string(k_max_mountinfo_line, 'a') + " rw - proc proc rw\n";
  EXPECT_EQ(error_of("22 1 0:21 / /proc rw - proc proc rw\n" + line),
            "/proc/self/mountinfo line 2: longer than 65536 bytes");
  const std::string big(k_max_mountinfo_size + 1, '\n');
  EXPECT_EQ(error_of(big), "/proc/self/mountinfo: larger than 67108864 bytes");
}

}  // namespace
}  // namespace gpuctk
