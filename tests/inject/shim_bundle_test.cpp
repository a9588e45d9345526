// The runtime shim's bundle edit (inject/shim_bundle.hpp) without the shim's process: a GPU container's
// config.json gets its devices (runtime-mode cdi) or gpuctk's prestart hook (runtime-mode prestart) and is
// replaced; one without a GPU, a pass-through and every error leave the file as it was. The shim's
// command line and exec are tested through the binary (tests/cli/runtime_test.cpp, tests/e2e/shim_*.sh).
#include "inject/shim_bundle.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "inject/inject_fixture.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk::inject {
namespace {

class ShimBundleTest : public InjectTest {
 protected:
  void SetUp() override {
    InjectTest::SetUp();
    ASSERT_FALSE(m_bundle_dir.path().empty());
  }

  // <bundle>/config.json: runc's default config with `env` added; the start uses the fixture's config.
  ShimBundle bundle(const std::vector<std::string>& env) {
    const std::string file = m_bundle_dir.write("config.json", oci::dump_config(runc_config(env)));
    m_before = read_file(file).value();
    m_start.config = m_cfg;
    return ShimBundle{.config_file = file, .bundle = m_bundle_dir.path(), .gpuctk_config = ""};
  }

  Result<void> edit(const ShimBundle& b) {
    return edit_bundle(b, m_start, [this](std::string_view w) { m_warned.emplace_back(w); });
  }

  [[nodiscard]] ordered_json written() const {
    return oci::parse_config(read_file(m_bundle_dir.path() + "/config.json").value()).value();
  }
  [[nodiscard]] std::string text() const { return read_file(m_bundle_dir.path() + "/config.json").value(); }

  test::TempDir m_bundle_dir{"gpuctk-shim-bundle"};
  HookStart m_start;
  std::string m_before;
  std::vector<std::string> m_warned;
};

TEST_F(ShimBundleTest, AGpuContainerGetsItsDevicesInTheReplacedFile) {
  install_spec();
  const auto b = bundle({"NVIDIA_VISIBLE_DEVICES=0"});
  const auto edited = edit(b);
  ASSERT_TRUE(edited) << edited.error().message;
  const auto paths = device_paths(written());
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia0"), paths.end());
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidiactl"), paths.end());
  EXPECT_TRUE(m_warned.empty());
}

TEST_F(ShimBundleTest, AContainerWithoutAGpuIsNotRewritten) {
  install_spec();
  const auto b = bundle({"PATH=/bin"});
  struct stat before {};
  ASSERT_EQ(::stat(b.config_file.c_str(), &before), 0);
  ASSERT_TRUE(edit(b));
  struct stat after {};
  ASSERT_EQ(::stat(b.config_file.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // replaced files get a new inode
  EXPECT_EQ(text(), m_before);
}

TEST_F(ShimBundleTest, PrestartModeAddsTheHookThatIsToldTheShimsConfig) {
  const auto b = [&] {
    auto out = bundle({"NVIDIA_VISIBLE_DEVICES=0"});
    out.gpuctk_config = "/etc/gpuctk/other.yaml";
    return out;
  }();
  m_start.config.runtime_mode = config::RuntimeMode::prestart;
  m_start.config.hook_path = "/opt/bin/gpuctk";
  ASSERT_TRUE(edit(b));
  const auto config = written();
  const ordered_json expected = {
      {"path", "/opt/bin/gpuctk"},
      {"args", {"gpuctk", "hook", "prestart", "--config", "/etc/gpuctk/other.yaml"}},
      {"env", ordered_json::array({"PATH=/usr/sbin:/usr/bin:/sbin:/bin"})}};
  ASSERT_EQ(config["hooks"]["prestart"].size(), 1U) << config.dump();
  EXPECT_EQ(config["hooks"]["prestart"][0], expected);
  EXPECT_FALSE(config["linux"].contains("devices"));  // the hook injects once the container exists
}

TEST_F(ShimBundleTest, PrestartModeLeavesAContainerWithoutAGpuAlone) {
  const auto b = bundle({"PATH=/bin"});
  m_start.config.runtime_mode = config::RuntimeMode::prestart;
  ASSERT_TRUE(edit(b));
  EXPECT_EQ(text(), m_before);
}

TEST_F(ShimBundleTest, TheStartsWarningsAreGivenOnceAndCleared) {
  install_spec();
  const auto b = bundle({"PATH=/bin"});
  m_start.warnings = {"c.yaml:2: unknown key \"x\" ignored"};
  ASSERT_TRUE(edit(b));
  EXPECT_EQ(m_warned, std::vector<std::string>{"c.yaml:2: unknown key \"x\" ignored"});
  EXPECT_TRUE(m_start.warnings.empty());
}

TEST_F(ShimBundleTest, ABrokenConfigPassesAContainerWithoutAGpuWithOneWarning) {
  const auto b = bundle({"PATH=/bin"});
  m_start.problem = Error{"c.yaml:3: broken"};
  ASSERT_TRUE(edit(b));
  EXPECT_EQ(m_warned, std::vector<std::string>{"c.yaml:3: broken; " + b.config_file +
                                               " asks for no GPU: left as it is"});
  EXPECT_EQ(text(), m_before);
}

TEST_F(ShimBundleTest, ABrokenConfigFailsAGpuContainerAndWritesNothing) {
  install_spec();
  const auto b = bundle({"NVIDIA_VISIBLE_DEVICES=0"});
  m_start.problem = Error{"c.yaml:3: broken"};
  const auto edited = edit(b);
  ASSERT_FALSE(edited);
  EXPECT_EQ(edited.error().message, "c.yaml:3: broken");
  EXPECT_TRUE(m_warned.empty());
  EXPECT_EQ(text(), m_before);
}

TEST_F(ShimBundleTest, AnUnknownDeviceFailsAndWritesNothing) {
  install_spec();
  const auto b = bundle({"NVIDIA_VISIBLE_DEVICES=7"});
  const auto edited = edit(b);
  ASSERT_FALSE(edited);
  // t4-debian's one GPU, by index and by its UUID.
  EXPECT_EQ(
      edited.error().message,
      "unknown device \"nvidia.com/gpu=7\" (devices: 0, GPU-473708f2-6eb9-5708-a0c1-d913c026ccc9, all)");
  EXPECT_EQ(text(), m_before);
}

TEST_F(ShimBundleTest, AMissingConfigFileIsTheError) {
  m_start.config = m_cfg;
  const ShimBundle b{.config_file = m_bundle_dir.path() + "/config.json",
                     .bundle = m_bundle_dir.path(),
                     .gpuctk_config = ""};
  const auto edited = edit(b);
  ASSERT_FALSE(edited);
  EXPECT_EQ(edited.error().message, "read " + b.config_file + ": No such file or directory");
}

}  // namespace
}  // namespace gpuctk::inject
