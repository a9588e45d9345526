// mount_readonly_file, through the mount API and through the pre-5.2 path (forced), each in a private
// mount namespace: the container sees the new content, cannot write it, the file underneath and the
// host are unchanged, and a symlink is never mounted over.
#include "rootfs/file_mount.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "rootfs/rootfs_test_support.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::rootfs {
namespace {

using test::host_listing;
using test::make_host_dirs;
using test::make_host_link;
using test::write_host_file;

class FileMountTest : public ::testing::TestWithParam<MountApi> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0 || !test::can_unshare_mounts()) {
      GTEST_SKIP() << "mounting needs root and a private mount namespace";
    }
    m_root = m_temp.path() + "/rootfs";
    make_host_dirs(m_root + "/proc/driver/nvidia");
    write_host_file(m_root + "/proc/driver/nvidia/params", "ModifyDeviceFiles: 1\n");
  }

  test::TempDir m_temp;
  std::string m_root;
};

std::vector<std::string> shm_leftovers() {
  std::vector<std::string> out;
  for (const auto& name : host_listing("/dev/shm")) {
    if (name.find(".gpuctk-") != std::string::npos) {
      out.push_back(name);
    }
  }
  return out;
}

TEST_P(FileMountTest, TheContainerSeesAReadOnlyCopy) {
  const auto before_shm = shm_leftovers();
  const std::string target = m_root + "/proc/driver/nvidia/params";
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    auto root = Root::open(m_root);
    if (!root) {
      return root.error().message;
    }
    if (auto r =
            mount_readonly_file(*root, "/proc/driver/nvidia/params", "ModifyDeviceFiles: 0\n", GetParam());
        !r) {
      return r.error().message;
    }
    const std::string seen = read_file(target).value_or("<unreadable>");
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    const std::string write = fd < 0 ? std::strerror(errno) : "writable";
    if (fd >= 0) {
      ::close(fd);
    }
    return "seen " + seen + "write " + write;
  });
  EXPECT_EQ(outcome, "seen ModifyDeviceFiles: 0\nwrite Read-only file system");
  EXPECT_EQ(read_file(target).value_or(""), "ModifyDeviceFiles: 1\n");  // underneath, and outside: as it was
  EXPECT_EQ(shm_leftovers(), before_shm);
}

TEST_P(FileMountTest, ASymlinkIsNeverMountedOver) {
  const std::string host_file = m_temp.write("host-params", "ModifyDeviceFiles: 1\n");
  ::unlink((m_root + "/proc/driver/nvidia/params").c_str());
  make_host_link(host_file, m_root + "/proc/driver/nvidia/params");
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    auto root = Root::open(m_root);
    if (!root) {
      return root.error().message;
    }
    auto r = mount_readonly_file(*root, "/proc/driver/nvidia/params", "ModifyDeviceFiles: 0\n", GetParam());
    return (r ? std::string("mounted") : r.error().message) + " | host " + read_file(host_file).value_or("?");
  });
  EXPECT_EQ(outcome, "mount over /proc/driver/nvidia/params in container root " + m_root +
                         ": not a regular file | host ModifyDeviceFiles: 1\n");
}

INSTANTIATE_TEST_SUITE_P(Apis, FileMountTest, ::testing::Values(MountApi::automatic, MountApi::legacy),
                         [](const auto& param_info) {
                           return param_info.param == MountApi::legacy ? "legacy" : "mount_api";
                         });

}  // namespace
}  // namespace gpuctk::rootfs
