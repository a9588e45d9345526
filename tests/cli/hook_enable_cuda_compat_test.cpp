// gpuctk hook enable-cuda-compat as a runtime runs it from a spec: the OCI state on stdin, the image's
// compat libraries (NVIDIA's own test libraries, tests/data/cuda_compat) in a bundle's root, the drop-in
// it writes and the log. The decision itself is tested in tests/steps/cuda_compat_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/run_gpuctk.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk {
namespace {

constexpr const char* k_dropin = "/etc/ld.so.conf.d/00-gpuctk-compat.conf";

class CliHookEnableCudaCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_config = m_dir.write("gpuctk.yaml", "log-file: " + m_dir.path() + "/gpuctk.log\nlog-level: info\n");
    m_dir.write("bundle/config.json", R"({"ociVersion":"1.0.2","root":{"path":"rootfs"}})");
    m_dir.write("bundle/rootfs/etc/.keep", "");
    m_state = m_dir.write("state.json", R"({"ociVersion":"1.0.2","id":"c1","status":"creating","pid":1,)"
                                        R"("bundle":")" +
                                            m_dir.path() + R"(/bundle"})");
  }

  // Puts tests/data/cuda_compat/`data` into the root as `container_path`.
  void install(const std::string& data, const std::string& container_path) {
    const auto bytes = read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/cuda_compat/" + data);
    ASSERT_TRUE(bytes) << bytes.error().message;
    m_dir.write("bundle/rootfs" + container_path, *bytes);
  }

  test::RunResult hook(const std::vector<std::string>& args) {
    std::vector<std::string> full{"hook", "enable-cuda-compat", "--config", m_config};
    full.insert(full.end(), args.begin(), args.end());
    return test::run_gpuctk(full, m_dir.path(), {.stdin_path = m_state});
  }

  // The drop-in in the root, or "<none>".
  [[nodiscard]] std::string dropin() const {
    return read_file(m_dir.path() + "/bundle/rootfs" + k_dropin).value_or("<none>");
  }

  // The messages of the log's lines at `level` ("warning"), without time and pid.
  [[nodiscard]] std::vector<std::string> logged(const std::string& level) const {
    std::vector<std::string> messages;
    const std::string marker = "] " + level + ": ";
    const std::string log = read_file(m_dir.path() + "/gpuctk.log").value_or("");
    for (const auto line : split(log, '\n')) {
      if (const auto at = line.find(marker); at != std::string_view::npos) {
        messages.emplace_back(line.substr(at + marker.size()));
      }
    }
    return messages;
  }

  test::TempDir m_dir;
  std::string m_config;
  std::string m_state;
};

TEST_F(CliHookEnableCudaCompatTest, ARealDriversNoteDecides) {
  install("libcuda.so.575.57.08", "/usr/local/cuda/compat/libcuda.so.575.57.08");
  // 570 is listed and older than the compat driver: used.
  auto r = hook({"--host-driver-version", "570.211.01"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(dropin(), "/usr/local/cuda/compat\n");
  EXPECT_EQ(logged("info"), std::vector<std::string>{"enable-cuda-compat: using /usr/local/cuda/compat in " +
                                                     m_dir.path() + "/bundle/rootfs"});
  // 590 is newer and not listed: not used (nothing written, nothing warned).
  ASSERT_TRUE(std::filesystem::remove(m_dir.path() + "/bundle/rootfs" + k_dropin));
  r = hook({"--host-driver-version=590.44.01"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dropin(), "<none>");
  EXPECT_EQ(logged("warning"), std::vector<std::string>{});
}

TEST_F(CliHookEnableCudaCompatTest, TheHostCudaVersionDecidesWithoutADriverVersion) {
  install("libcuda.so.575.57.08", "/usr/local/cuda/compat/libcuda.so.575.57.08");
  auto r = hook({"--host-cuda-version", "12.9"});  // the note says CUDA 12.9: not newer
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dropin(), "<none>");
  r = hook({"--host-cuda-version", "12.8"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dropin(), "/usr/local/cuda/compat\n");
}

// What NVIDIA's CDI generator writes for a Jetson Orin (pkg/nvcdi/lib-csv.go): the compat libraries in
// another folder, named libcuda.so.1.1, with a note whose descriptor runs past its section.
TEST_F(CliHookEnableCudaCompatTest, AnotherCompatFolderAsForOrin) {
  install("libcuda.orin.13.2.1.so.1.1", "/usr/local/cuda/compat_orin/libcuda.so.1.1");
  auto r = hook({"--host-cuda-version=13.1", "--cuda-compat-container-root=/usr/local/cuda/compat_orin"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dropin(), "/usr/local/cuda/compat_orin\n");
  EXPECT_EQ(logged("warning"), std::vector<std::string>{});
  // The default folder has nothing.
  ASSERT_TRUE(std::filesystem::remove(m_dir.path() + "/bundle/rootfs" + k_dropin));
  r = hook({"--host-cuda-version=13.1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dropin(), "<none>");
}

// The bug this hook had: a note it cannot read stopped the container. Now it warns once and decides as
// without a note (major versions: 99 against 90 and 550).
TEST_F(CliHookEnableCudaCompatTest, ANoteThatIsNotJsonWarnsOnceAndFallsBack) {
  install("libcuda.invalid.json.so.99.88", "/usr/local/cuda/compat/libcuda.so.99.88");
  const std::string warning =
      "enable-cuda-compat: ignoring the note of /usr/local/cuda/compat/libcuda.so.99.88: section "
      ".note.cuda.fwd_compatibility: note descriptor: syntax error while parsing object key - unexpected "
      "'}'; expected string literal at line 1, column 35";
  auto r = hook({"--host-driver-version", "550.54.15"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(dropin(), "<none>");
  EXPECT_EQ(logged("warning"), std::vector<std::string>{warning});
  r = hook({"--host-driver-version", "90.1.2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dropin(), "/usr/local/cuda/compat\n");
  EXPECT_EQ(logged("warning"), (std::vector<std::string>{warning, warning}));
  // With the host's CUDA version given, no usable note means no compat libraries.
  ASSERT_TRUE(std::filesystem::remove(m_dir.path() + "/bundle/rootfs" + k_dropin));
  r = hook({"--host-driver-version", "90.1.2", "--host-cuda-version", "11.0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dropin(), "<none>");
}

TEST_F(CliHookEnableCudaCompatTest, TheCompatFolderIsAnAbsoluteContainerPath) {
  for (const char* bad : {"usr/local/cuda/compat", "/usr/local/cuda/../cuda/compat", "/usr/./compat", ""}) {
    const auto r = hook({"--host-driver-version", "550.54.15", "--cuda-compat-container-root", bad});
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_EQ(r.err.rfind(
                  "gpuctk: error: enable-cuda-compat: --cuda-compat-container-root " + quote(bad) + ": ", 0),
              0)
        << r.err;
    EXPECT_EQ(dropin(), "<none>");
  }
}

TEST_F(CliHookEnableCudaCompatTest, HelpNamesTheFlags) {
  const auto r = test::run_gpuctk({"hook", "enable-cuda-compat", "--help"}, m_dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* flag : {"--host-driver-version", "--host-cuda-version", "--cuda-compat-container-root"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag << "\n" << r.out;
  }
}

}  // namespace
}  // namespace gpuctk
