#include "steps/root_edits.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rootfs/rootfs_test_support.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::steps {
namespace {

using test::host_kind;
using test::host_listing;
using test::host_readlink;
using test::make_host_dirs;
using test::make_host_link;
using test::write_host_file;

std::string state_with_bundle(const std::string& bundle, const std::string& extra = "") {
  return R"({"ociVersion":"1.0.2","id":"x","pid":1,"bundle":")" + bundle + "\"" + extra + "}";
}

// --- container_root_from_state ----------------------------------------------------------------------

TEST(ContainerRootFromState, ReadsRootPathFromTheBundlesConfig) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  temp.write("config.json", R"({"ociVersion":"1.0.2","root":{"path":"rootfs"}})");
  auto root = container_root_from_state(state_with_bundle(temp.path()));
  ASSERT_TRUE(root) << root.error().message;
  EXPECT_EQ(*root, temp.path() + "/rootfs");
  temp.write("config.json", R"({"ociVersion":"1.0.2","root":{"path":"/var/lib/containers/x/merged/"}})");
  auto absolute = container_root_from_state(state_with_bundle(temp.path()));
  ASSERT_TRUE(absolute) << absolute.error().message;
  EXPECT_EQ(*absolute, "/var/lib/containers/x/merged");
}

TEST(ContainerRootFromState, PrefersCrunsRoot) {
  // No config.json at all: crun's root is enough.
  auto root = container_root_from_state(state_with_bundle("/run/b", R"(,"root":"rootfs")"));
  ASSERT_TRUE(root) << root.error().message;
  EXPECT_EQ(*root, "/run/b/rootfs");
  // Cleaned lexically: a root that climbs out of the bundle ends at "/", which Root::open refuses.
  auto up = container_root_from_state(state_with_bundle("/run/b", R"(,"root":"../../../..")"));
  ASSERT_TRUE(up) << up.error().message;
  EXPECT_EQ(*up, "/");
}

TEST(ContainerRootFromState, Errors) {
  auto relative = container_root_from_state(state_with_bundle("run/b"));
  ASSERT_FALSE(relative);
  EXPECT_EQ(relative.error().message, "OCI state: bundle \"run/b\" is not an absolute path");
  auto not_json = container_root_from_state("[]");
  ASSERT_FALSE(not_json);
  EXPECT_EQ(not_json.error().message, "OCI state: the document is an array, expected an object");
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  auto missing = container_root_from_state(state_with_bundle(temp.path()));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "read " + temp.path() + "/config.json: No such file or directory");
  // A config.json that is a symlink (to a host file) is not followed.
  const std::string host = temp.write("host.json", R"({"root":{"path":"/"}})");
  make_host_link(host, temp.path() + "/config.json");
  auto link = container_root_from_state(state_with_bundle(temp.path()));
  ASSERT_FALSE(link);
  EXPECT_EQ(
      link.error().message,
      "read " + temp.path() + "/config.json: is a symbolic link, refused (bundle files are never followed)");
  ::unlink((temp.path() + "/config.json").c_str());
  temp.write("config.json", R"({"ociVersion":"1.0.2"})");
  auto no_root = container_root_from_state(state_with_bundle(temp.path()));
  ASSERT_FALSE(no_root);
  EXPECT_EQ(no_root.error().message, "config.json: root.path is missing");
}

TEST(ContainerRootFromState, TheCliRefusesARootThatIsTheHostsRoot) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  test::TempDir scratch;
  temp.write("config.json", R"({"ociVersion":"1.0.2","root":{"path":"../../../../../../.."}})");
  const std::string config = scratch.write("config.yaml", "log-level: info\n");
  const test::HookRun run =
      test::run_hook({"create-symlinks", "--config", config, "--link", "x::/gpuctk-test-never"}, temp.path(),
                     scratch.path());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "gpuctk: error: create-symlinks: container root \"/\": refusing the host's root\n");
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(host_kind("/gpuctk-test-never"), "missing");
}

// --- parse_links / create_symlinks --------------------------------------------------------------------

TEST(ParseLinks, ParsesAndDropsDuplicates) {
  auto links = parse_links({"libcuda.so.1::/usr/lib/libcuda.so", "../card0::/dev/dri/by-path/x",
                            "libcuda.so.1::/usr/lib/libcuda.so"});
  ASSERT_TRUE(links) << links.error().message;
  ASSERT_EQ(links->size(), 2U);
  EXPECT_EQ((*links)[0].target, "libcuda.so.1");
  EXPECT_EQ((*links)[0].link, "/usr/lib/libcuda.so");
  EXPECT_EQ((*links)[1].target, "../card0");
  EXPECT_EQ((*links)[1].link, "/dev/dri/by-path/x");
}

TEST(ParseLinks, Errors) {
  const auto error = [](const std::string& value) {
    auto r = parse_links({value});
    return r ? std::string("ok") : r.error().message;
  };
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"a", "--link \"a\": expected TARGET::LINK"},
           {"::/b", "--link \"::/b\": expected TARGET::LINK"},
           {"a::", "--link \"a::\": expected TARGET::LINK"},
           {"a::/b::/c", "--link \"a::/b::/c\": expected TARGET::LINK"},
           {"a::b", "--link \"a::b\": \"b\": not an absolute path"},
       }) {
    EXPECT_EQ(error(in), want) << in;
  }
  EXPECT_EQ(
      error("x::/usr/../../etc/passwd"),
      "--link \"x::/usr/../../etc/passwd\": \"/usr/../../etc/passwd\": \".\" and \"..\" are not allowed in a "
      "container path");
  auto twice = parse_links({"a::/l", "b::/l"});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message, "--link: \"/l\" is given two targets, \"a\" and \"b\"");
  auto many = parse_links(std::vector<std::string>(k_max_hook_args + 1, "a::/l"));
  ASSERT_FALSE(many);
  EXPECT_EQ(many.error().message, "too many links: 8193");
}

TEST(CreateSymlinks, CountsWhatItCreatedOrReplaced) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string root_path = temp.path() + "/rootfs";
  make_host_link("libcuda.so.1", root_path + "/usr/lib/libcuda.so");
  write_host_file(root_path + "/usr/lib/libnvidia-ml.so", "a file");
  auto root = rootfs::Root::open(root_path);
  ASSERT_TRUE(root) << root.error().message;
  auto changed = create_symlinks(*root, {{"libcuda.so.1", "/usr/lib/libcuda.so"},
                                         {"libnvidia-ml.so.1", "/usr/lib/libnvidia-ml.so"},
                                         {"../card0", "/dev/dri/by-path/pci-card"}});
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_EQ(*changed, 2U);
  EXPECT_EQ(host_readlink(root_path + "/usr/lib/libnvidia-ml.so"), "libnvidia-ml.so.1");
  EXPECT_EQ(host_readlink(root_path + "/dev/dri/by-path/pci-card"), "../card0");
  // The first error stops: a directory where a link goes.
  make_host_dirs(root_path + "/dir");
  auto failed = create_symlinks(*root, {{"x", "/dir"}, {"y", "/after"}});
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message, "create link /dir in container root " + root_path + ": Is a directory");
  EXPECT_EQ(host_kind(root_path + "/after"), "missing");
}

// --- open_host_ldconfig -----------------------------------------------------------------------------

// NVIDIA's toolkit reads `--ldconfig-path PATH` as the host's ldconfig (nvidia-ctk writes
// "--ldconfig-path /sbin/ldconfig" into its specs) and drops a leading "@": both are the host's program
// (its .real when there is one), never a file of an image.
TEST(OpenHostLdconfig, APathWithOrWithoutAtIsTheHostsProgram) {
  if (::access("/sbin/ldconfig", R_OK) != 0) {
    GTEST_SKIP() << "no /sbin/ldconfig on this host";
  }
  const std::string expected =
      read_file(::access("/sbin/ldconfig.real", X_OK) == 0 ? "/sbin/ldconfig.real" : "/sbin/ldconfig")
          .value_or("x");
  for (const char* path : {"@/sbin/ldconfig", "/sbin/ldconfig"}) {
    auto host = open_host_ldconfig(path);
    ASSERT_TRUE(host) << path << ": " << host.error().message;
    EXPECT_EQ(read_file("/proc/self/fd/" + std::to_string(host->get())).value_or(""), expected) << path;
  }
  std::string report;
  for (const char* path : {"@sbin/ldconfig", "sbin/ldconfig", "@", ""}) {
    auto bad = open_host_ldconfig(path);
    report += bad ? std::string("opened\n") : bad.error().message + "\n";
  }
  EXPECT_EQ(report, R"x(--ldconfig-path "@sbin/ldconfig": expected an absolute host path
--ldconfig-path "sbin/ldconfig": expected an absolute host path
--ldconfig-path "@": expected an absolute host path
--ldconfig-path "": expected an absolute host path
)x");
}

// --- enable_cuda_compat (the decision itself is tested in cuda_compat_test) -------------------------

// A container root for enable_cuda_compat, and a log file to see its warnings in.
class EnableCudaCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_temp.path().empty());
    make_host_dirs(m_root_path + "/etc");
    auto log = config::Log::open(m_log_path, config::LogLevel::info);
    ASSERT_TRUE(log) << log.error().message;
    m_log = std::move(*log);
  }

  // enable_cuda_compat on the root; "used", "not used" or "error: <message>".
  std::string run(const CudaCompatHost& host, std::string_view compat_dir = k_cuda_compat_dir) {
    auto root = rootfs::Root::open(m_root_path);
    if (!root) {
      return "error: " + root.error().message;
    }
    auto used = enable_cuda_compat(*root, host, compat_dir, m_log);
    if (!used) {
      return "error: " + used.error().message;
    }
    return *used ? "used" : "not used";
  }

  [[nodiscard]] std::string dropin() const {
    return read_file(m_root_path + k_cuda_compat_dropin).value_or("<none>");
  }

  // The warnings logged so far, without time and pid.
  [[nodiscard]] std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    const std::string log = read_file(m_log_path).value_or("");
    for (const auto line : split(log, '\n')) {
      if (const auto at = line.find("] warning: "); at != std::string_view::npos) {
        out.emplace_back(line.substr(at + 11));
      }
    }
    return out;
  }

  test::TempDir m_temp;
  std::string m_root_path = m_temp.path() + "/rootfs";
  std::string m_log_path = m_temp.path() + "/gpuctk.log";
  config::Log m_log;
};

TEST_F(EnableCudaCompatTest, NothingToDoWithoutAVersionOrADirectory) {
  write_host_file(m_root_path + "/usr/local/cuda/compat/libcuda.so.999.1.1", "");
  EXPECT_EQ(run({}), "not used");
  std::filesystem::remove_all(m_root_path + "/usr");
  EXPECT_EQ(run({"550.54.15", ""}), "not used");
  // A compat directory that is a link to a host directory is not one inside the root.
  make_host_dirs(m_temp.path() + "/host-compat");
  write_host_file(m_temp.path() + "/host-compat/libcuda.so.999.1.1", "");
  make_host_link(m_temp.path() + "/host-compat", m_root_path + "/usr/local/cuda/compat");
  EXPECT_EQ(run({"550.54.15", ""}), "not used");
  EXPECT_EQ(host_listing(m_root_path + "/etc"), std::vector<std::string>{});
  EXPECT_EQ(warnings(), std::vector<std::string>{});
}

// NVIDIA's TestCompatLibs: its libraries are empty files, so they have no readable note and the majors
// decide. Each such library is one warning.
TEST_F(EnableCudaCompatTest, AnUnreadableNoteWarnsOnceAndTheMajorsDecide) {
  write_host_file(m_root_path + "/usr/local/cuda/compat/libcuda.so.333.88.99", "");
  EXPECT_EQ(run({"222.55.66", ""}), "used");
  EXPECT_EQ(dropin(), "/usr/local/cuda/compat\n");
  EXPECT_EQ(warnings(),
            std::vector<std::string>{"enable-cuda-compat: ignoring the note of "
                                     "/usr/local/cuda/compat/libcuda.so.333.88.99: not an ELF file"});
  ASSERT_EQ(::unlink((m_root_path + k_cuda_compat_dropin).c_str()), 0);
  EXPECT_EQ(run({"333.55.66", ""}), "not used");  // same major
  EXPECT_EQ(run({"99.55.66", ""}), "used");       // 333 > 99: numbers, not text
  EXPECT_EQ(warnings().size(), 3U);
  // With the host's CUDA version given, no usable note is no compat.
  ASSERT_EQ(::unlink((m_root_path + k_cuda_compat_dropin).c_str()), 0);
  EXPECT_EQ(run({"222.55.66", "12.2"}), "not used");
  EXPECT_EQ(dropin(), "<none>");
}

TEST_F(EnableCudaCompatTest, SeveralLibrariesAreOneWarningAndNothingDone) {
  write_host_file(m_root_path + "/usr/local/cuda/compat/libcuda.so.333.88.99", "");
  write_host_file(m_root_path + "/usr/local/cuda/compat/libcuda.so.333.88.99.bak", "");
  EXPECT_EQ(run({"222.55.66", ""}), "not used");
  EXPECT_EQ(warnings(),
            std::vector<std::string>{"enable-cuda-compat: 2 compat libraries in /usr/local/cuda/compat "
                                     "(libcuda.so.333.88.99, libcuda.so.333.88.99.bak): using none"});
}

// NVIDIA's "symlinks are followed" and "symlinks stay in container": links are resolved inside the root;
// the drop-in names the folder as given (ldconfig resolves it the same way inside the container).
TEST_F(EnableCudaCompatTest, LinksInTheFolderPathStayInTheRoot) {
  write_host_file(m_root_path + "/etc/alternatives/cuda/compat/libcuda.so.333.88.99", "");
  make_host_link("/etc/alternatives/cuda", m_root_path + "/usr/local/cuda");
  EXPECT_EQ(run({"222.55.66", ""}), "used");
  EXPECT_EQ(dropin(), "/usr/local/cuda/compat\n");
  std::filesystem::remove_all(m_root_path + "/etc/alternatives");
  ASSERT_EQ(::unlink((m_root_path + k_cuda_compat_dropin).c_str()), 0);
  write_host_file(m_root_path + "/compat/libcuda.so.333.88.99", "");
  make_host_link("../../../../../../", m_root_path + "/usr/local/cuda");
  EXPECT_EQ(run({"222.55.66", ""}), "used");
  EXPECT_EQ(dropin(), "/usr/local/cuda/compat\n");
}

// NVIDIA's "specified compat path is used".
TEST_F(EnableCudaCompatTest, TheFolderCanBeGiven) {
  write_host_file(m_root_path + "/usr/local/cuda/compat/libcuda.so.111.88.99", "");
  write_host_file(m_root_path + "/usr/local/cuda/compat-other/libcuda.so.333.88.99", "");
  EXPECT_EQ(run({"222.55.66", ""}, "/usr/local/cuda/compat-other"), "used");
  EXPECT_EQ(dropin(), "/usr/local/cuda/compat-other\n");
}

TEST_F(EnableCudaCompatTest, TheFolderIsAnAbsoluteContainerPath) {
  EXPECT_EQ(
      run({"222.55.66", ""}, "usr/local/cuda/compat"),
      "error: --cuda-compat-container-root \"usr/local/cuda/compat\": \"usr/local/cuda/compat\": not an "
      "absolute path");
  EXPECT_EQ(
      run({"222.55.66", ""}, "/usr/local/../compat"),
      "error: --cuda-compat-container-root \"/usr/local/../compat\": \"/usr/local/../compat\": \".\" and "
      "\"..\" are not allowed in a container path");
  EXPECT_EQ(dropin(), "<none>");
}

TEST_F(EnableCudaCompatTest, ADropInThatCannotBeWrittenIsAnError) {
  write_host_file(m_root_path + "/usr/local/cuda/compat/libcuda.so.333.88.99", "");
  write_host_file(m_root_path + "/etc/ld.so.conf.d", "a file where the directory should be");
  EXPECT_EQ(run({"222.55.66", ""}).rfind("error: ", 0), 0U);
}

// --- params_without_device_modification / disable_device_node_modification ---------------------------

TEST(ParamsWithoutDeviceModification, RewritesOnlyTheModifyDeviceFilesLine) {
  EXPECT_EQ(params_without_device_modification(
                "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n"),
            "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 0\nDeviceFileUID: 0\n");
  EXPECT_EQ(params_without_device_modification("ModifyDeviceFiles: 1"), "ModifyDeviceFiles: 0");
  EXPECT_EQ(params_without_device_modification("ModifyDeviceFiles : 2\n"), "ModifyDeviceFiles: 0\n");
  EXPECT_EQ(params_without_device_modification("ModifyDeviceFiles: 0\n"), std::nullopt);
  EXPECT_EQ(params_without_device_modification("DeviceFileMode: 438\n"), std::nullopt);
  EXPECT_EQ(params_without_device_modification(""), std::nullopt);
}

TEST(DisableDeviceNodeModification, NothingToDoWithoutHostFileOrContainerFile) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string root_path = temp.path() + "/rootfs";
  make_host_dirs(root_path + "/proc");
  auto root = rootfs::Root::open(root_path);
  ASSERT_TRUE(root) << root.error().message;
  auto no_host = disable_device_node_modification(*root, temp.path() + "/missing/params");
  ASSERT_TRUE(no_host) << no_host.error().message;
  EXPECT_FALSE(*no_host);
  const std::string zero = temp.write("host/params-zero", "ModifyDeviceFiles: 0\n");
  auto already = disable_device_node_modification(*root, zero);
  ASSERT_TRUE(already) << already.error().message;
  EXPECT_FALSE(*already);
  const std::string one = temp.write("host/params-one", "ModifyDeviceFiles: 1\n");
  auto no_container_file = disable_device_node_modification(*root, one);
  ASSERT_TRUE(no_container_file) << no_container_file.error().message;
  EXPECT_FALSE(*no_container_file);
  // The host's params file is read without following a symlink.
  make_host_link(one, temp.path() + "/host/params-link");
  auto linked = disable_device_node_modification(*root, temp.path() + "/host/params-link");
  ASSERT_FALSE(linked);
  EXPECT_EQ(linked.error().message,
            "read " + temp.path() + "/host/params-link: Too many levels of symbolic links");
}

TEST(DisableDeviceNodeModification, MountsAReadOnlyCopyOverTheContainersFile) {
  if (!test::can_unshare_mounts()) {
    GTEST_SKIP() << "cannot make a private mount namespace here";
  }
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string root_path = temp.path() + "/rootfs";
  write_host_file(root_path + "/proc/driver/nvidia/params", "ModifyDeviceFiles: 1\nDeviceFileMode: 438\n",
                  0444);
  const std::string host = temp.write("host/params", "ModifyDeviceFiles: 1\nDeviceFileMode: 438\n");
  const std::string report = test::in_private_mount_ns([&]() -> std::string {
    auto root = rootfs::Root::open(root_path);
    if (!root) {
      return root.error().message;
    }
    auto done = disable_device_node_modification(*root, host);
    if (!done) {
      return done.error().message;
    }
    const std::string file = root_path + "/proc/driver/nvidia/params";
    struct stat st {};
    ::stat(file.c_str(), &st);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    const std::string write_result = fd < 0 ? std::string(std::strerror(errno)) : "writable";
    if (fd >= 0) {
      ::close(fd);
    }
    return std::string(*done ? "mounted" : "not mounted") + ", content " +
           quote(read_file(file).value_or("<unreadable>")) + ", mode " + std::to_string(st.st_mode & 0777) +
           ", write " + write_result;
  });
  EXPECT_EQ(report,
            "mounted, content \"ModifyDeviceFiles: 0\\nDeviceFileMode: 438\\n\", mode 292, write "
            "Read-only file system");
  // Outside the child's namespace the image's file is as it was.
  EXPECT_EQ(read_file(root_path + "/proc/driver/nvidia/params").value_or(""),
            "ModifyDeviceFiles: 1\nDeviceFileMode: 438\n");
}

// --- chmod_paths ------------------------------------------------------------------------------------

TEST(ChmodPaths, ChangesModesAndCountsChanges) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string root_path = temp.path() + "/rootfs";
  make_host_dirs(root_path + "/dev/dri");
  ::chmod((root_path + "/dev/dri").c_str(), 0700);
  write_host_file(root_path + "/dev/file", "x", 0755);
  auto root = rootfs::Root::open(root_path);
  ASSERT_TRUE(root) << root.error().message;
  auto changed = chmod_paths(*root, 0755, {"/dev/dri", "/dev/file"});
  ASSERT_TRUE(changed) << changed.error().message;
  EXPECT_EQ(*changed, 1U);
  struct stat st {};
  ASSERT_EQ(::stat((root_path + "/dev/dri").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755U);
}

TEST(ChmodPaths, RefusesLinksBadModesAndMissingPaths) {
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string root_path = temp.path() + "/rootfs";
  const std::string host = temp.write("host-file", "x");
  ::chmod(host.c_str(), 0600);
  make_host_link(host, root_path + "/dev/link");
  auto root = rootfs::Root::open(root_path);
  ASSERT_TRUE(root) << root.error().message;
  auto link = chmod_paths(*root, 0777, {"/dev/link"});
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().message, "chmod /dev/link in container root " + root_path + ": is a symlink");
  auto mode = chmod_paths(*root, 010000, {"/dev"});
  ASSERT_FALSE(mode);
  EXPECT_EQ(mode.error().message, "--mode 4096: not a file mode");
  auto missing = chmod_paths(*root, 0755, {"/dev/missing"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "/dev/missing in container root " + root_path + ": No such file or directory");
  struct stat st {};
  ASSERT_EQ(::stat(host.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600U);
}

// update-application-profile: the text NVIDIA's hook writes, byte for byte (its own test's masks).
TEST(ApplicationProfile, TheTextIsNvidias) {
  EXPECT_EQ(application_profile_text(0x1),
            R"({"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",0x1]}],)"
            R"("rules":[{"pattern":[],"profile":"_container_"}]})");
  EXPECT_NE(application_profile_text(0x100).find(",0x100]"), std::string::npos);
  EXPECT_NE(application_profile_text(0x8001).find(",0x8001]"), std::string::npos);
  EXPECT_NE(application_profile_text(0).find(",0x0]"), std::string::npos);
}

// Only /dev/nvidia<N> character devices count, each only looked at: the control and UVM nodes, a file or
// a FIFO named like a GPU's node (which would block an open) and a minor past 63 (one warning) are left
// out; a /dev that is a link resolves inside the root; the profile replaces a FIFO at its path without
// opening it; no GPU node writes nothing.
TEST(ApplicationProfile, TheMaskOfTheContainersGpuNodesAndNothingElse) {
  if (::geteuid() != 0) {
    GTEST_SKIP() << "only root makes device nodes";
  }
  test::TempDir temp;
  ASSERT_FALSE(temp.path().empty());
  const std::string root_path = temp.path() + "/rootfs";
  make_host_dirs(root_path + "/devices");
  make_host_link("/devices", root_path + "/dev");  // absolute: resolved inside the root
  for (const auto& [name, minor] : {std::pair{"nvidia1", 1U},
                                    {"nvidia12", 12U},
                                    {"nvidia64", 64U},
                                    {"nvidiactl", 255U},
                                    {"nvidia-uvm", 0U}}) {
    ASSERT_EQ(::mknod((root_path + "/devices/" + name).c_str(), S_IFCHR | 0666, ::makedev(195, minor)), 0);
  }
  write_host_file(root_path + "/devices/nvidia3", "");
  ASSERT_EQ(::mkfifo((root_path + "/devices/nvidia4").c_str(), 0600), 0);
  const std::string profile = root_path + std::string(k_application_profile);
  make_host_dirs(root_path + "/etc/nvidia/nvidia-application-profiles-rc.d");
  ASSERT_EQ(::mkfifo(profile.c_str(), 0600), 0);
  const std::string log_path = temp.path() + "/gpuctk.log";
  auto log = config::Log::open(log_path, config::LogLevel::info);
  ASSERT_TRUE(log) << log.error().message;
  auto root = rootfs::Root::open(root_path);
  ASSERT_TRUE(root) << root.error().message;

  auto mask = update_application_profile(*root, *log);
  ASSERT_TRUE(mask) << mask.error().message;
  EXPECT_EQ(*mask, std::optional<uint64_t>((1U << 1) | (1U << 12)));
  EXPECT_EQ(host_kind(profile), "file");
  EXPECT_EQ(read_file(profile).value_or(""), application_profile_text(0x1002));
  struct stat st {};
  ASSERT_EQ(::stat(profile.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444U);
  const std::string text = read_file(log_path).value_or("");
  EXPECT_NE(text.find("warning: update-application-profile: \"/dev/nvidia64\" has minor 64, outside 0-63"),
            std::string::npos)
      << text;

  for (const char* name : {"nvidia1", "nvidia12", "nvidia64"}) {
    ASSERT_EQ(::unlink((root_path + "/devices/" + name).c_str()), 0);
  }
  ASSERT_EQ(::unlink(profile.c_str()), 0);
  mask = update_application_profile(*root, *log);
  ASSERT_TRUE(mask) << mask.error().message;
  EXPECT_EQ(*mask, std::nullopt);
  EXPECT_EQ(host_kind(profile), "missing");
}

}  // namespace
}  // namespace gpuctk::steps
