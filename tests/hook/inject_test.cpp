// Injection over fixture hosts: request -> config.json (golden), idempotence, untouched keys, the
// in-memory spec when none is installed or it is stale, and one clear error per bad request.
#include "hook/inject.hpp"

#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>

#include "cdi/codec.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "fixtures/builder/hosts.hpp"
#include "oci/bundle.hpp"
#include "util/file.hpp"

namespace gpuctk::hook {
namespace {

using nlohmann::ordered_json;

const std::string k_data = std::string(GPUCTK_SOURCE_DIR) + "/tests/data/oci/";

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size()) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

class InjectTest : public ::testing::Test {
 protected:
  void SetUp() override { materialise("t4-debian"); }

  void materialise(std::string_view host) {
    auto f = fixture::materialise_temp(host);
    ASSERT_TRUE(f) << f.error().message;
    m_fixture = std::make_unique<fixture::Fixture>(std::move(*f));
    if (!m_fixture->host.nodes_are_real) {
      GTEST_SKIP() << "device nodes need root to mknod";
    }
    m_cfg = Config{};
    m_cfg.driver_root = m_fixture->host.driver_root;
    m_cfg.dev_root = m_fixture->host.dev_root;
    m_cfg.spec_dirs = {m_fixture->temp.path() + "/cdi"};
    std::filesystem::create_directories(m_cfg.spec_dirs[0]);
  }

  // Writes the host's spec (proc mode, fixed hook path) into the spec directory.
  void install_spec(std::string_view driver_version_override = "") {
    discover::DiscoverOptions o{m_cfg.driver_root, m_cfg.dev_root, discover::Mode::proc, {}};
    auto inv = discover::discover(o);
    ASSERT_TRUE(inv) << inv.error().message;
    if (!driver_version_override.empty()) {
      inv->driver_version = std::string(driver_version_override);
    }
    cdi::BuildOptions b;
    b.hook_path = "/usr/local/bin/gpuctk";
    auto spec = cdi::build_spec(*inv, b);
    ASSERT_TRUE(spec);
    ASSERT_TRUE(write_file_atomic(m_cfg.spec_dirs[0] + "/nvidia.yaml", cdi::write_spec(*spec, cdi::Format::yaml), 0644));
  }

  static ordered_json runc_config(const std::vector<std::string>& env) {
    auto config = oci::parse_config(read_file(k_data + "runc-spec-config.json").value()).value();
    for (const auto& e : env) {
      config["process"]["env"].push_back(e);
    }
    return config;
  }

  Result<InjectResult> inject(ordered_json& config) { return inject_request(config, m_cfg, m_log); }

  std::unique_ptr<fixture::Fixture> m_fixture;
  Config m_cfg;
  Log m_log;
};

std::vector<std::string> device_paths(const ordered_json& config) {
  std::vector<std::string> out;
  for (const auto& d : config["linux"]["devices"]) {
    out.push_back(d["path"]);
  }
  return out;
}

bool has_mount(const ordered_json& config, std::string_view destination) {
  for (const auto& m : config["mounts"]) {
    if (m["destination"] == destination) {
      return true;
    }
  }
  return false;
}

TEST_F(InjectTest, GoldenConfigForGpu0WithInstalledSpec) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->changed);
  EXPECT_EQ(result->devices, (std::vector<std::string>{"nvidia.com/gpu=0"}));
  EXPECT_EQ(result->spec_source, m_cfg.spec_dirs[0] + "/nvidia.yaml");
  const std::string text = replace_all(oci::dump_config(config), m_fixture->host.root, "@ROOT@");
  const std::string golden = std::string(GPUCTK_SOURCE_DIR) + "/tests/golden/t4-debian.config-gpu0.json";
  if (const char* u = std::getenv("GPUCTK_UPDATE_GOLDEN"); u != nullptr && u == std::string("1")) {
    ASSERT_TRUE(write_file_atomic(golden, text, 0644));
  }
  EXPECT_EQ(text, read_file(golden).value());
}

TEST_F(InjectTest, SameRequestTwiceGivesTheSameConfigAsOnce) {
  install_spec();
  auto once = runc_config({"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=all"});
  ASSERT_TRUE(inject(once));
  // Keep the request in the config so the second pass injects again rather than seeing "void".
  auto twice = once;
  for (auto& e : twice["process"]["env"]) {
    if (e == "NVIDIA_VISIBLE_DEVICES=void") {
      e = "NVIDIA_VISIBLE_DEVICES=all";
    }
  }
  ASSERT_TRUE(inject(twice));
  EXPECT_EQ(oci::dump_config(twice), oci::dump_config(once));
}

TEST_F(InjectTest, KeysItDoesNotOwnAreKept) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
  config["annotations"] = {{"io.kubernetes.pod.name", "p"}};
  config["x-vendor-extension"] = {{"big", 18446744073709551615ull}, {"neg", -3}, {"f", 1.5}};
  const auto before = config;
  ASSERT_TRUE(inject(config));
  EXPECT_EQ(config["annotations"], before["annotations"]);
  EXPECT_EQ(config["x-vendor-extension"], before["x-vendor-extension"]);
  EXPECT_EQ(config["process"]["args"], before["process"]["args"]);
  EXPECT_EQ(config["linux"]["namespaces"], before["linux"]["namespaces"]);
  EXPECT_EQ(config["root"], before["root"]);
}

TEST_F(InjectTest, NoRequestLeavesTheConfigUntouched) {
  install_spec();
  for (const auto& env : {std::vector<std::string>{}, {"NVIDIA_VISIBLE_DEVICES="}, {"NVIDIA_VISIBLE_DEVICES=void"}}) {
    auto config = runc_config(env);
    const auto before = config;
    auto result = inject(config);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_FALSE(result->changed);
    EXPECT_EQ(config, before);
  }
}

TEST_F(InjectTest, CapabilitiesFilterDriverFiles) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=utility"});
  ASSERT_TRUE(inject(config));
  EXPECT_TRUE(has_mount(config, "/usr/bin/nvidia-smi"));
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.183.01"));
  EXPECT_FALSE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_FALSE(has_mount(config, "/usr/lib/i386-linux-gnu/libnvidia-ml.so.535.183.01"));
  EXPECT_TRUE(has_mount(config, "/lib/firmware/nvidia/535.183.01/gsp_tu10x.bin")) << "firmware goes with every set";

  auto with32 = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute,compat32"});
  ASSERT_TRUE(inject(with32));
  EXPECT_TRUE(has_mount(with32, "/usr/lib/i386-linux-gnu/libcuda.so.535.183.01"));
  EXPECT_FALSE(has_mount(with32, "/usr/bin/nvidia-smi"));
}

TEST_F(InjectTest, NoneInjectsTheDriverWithoutGpuNodes) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=none"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  const auto paths = device_paths(config);
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidiactl"), paths.end());
  EXPECT_EQ(std::ranges::find(paths, "/dev/nvidia0"), paths.end());
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
}

TEST_F(InjectTest, UnknownDeviceListsTheDevicesThatExist) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=99"});
  auto result = inject(config);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            "unknown device \"nvidia.com/gpu=99\" (devices: 0, " + m_fixture->manifest.gpus[0].uuid + ", all)");
}

TEST_F(InjectTest, WithoutAnInstalledSpecTheSpecIsBuiltInMemory) {
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=" + m_fixture->manifest.gpus[0].uuid});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->spec_source, "in-memory spec (driver 535.183.01)");
  const auto paths = device_paths(config);
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia0"), paths.end());
}

TEST_F(InjectTest, StaleSpecIsReplacedByAnInMemoryOne) {
  install_spec("530.30.02");
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0"});
  const std::string log_path = m_fixture->temp.path() + "/hook.log";
  m_log = Log::open(log_path, LogLevel::info).value();
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->spec_source, "in-memory spec (driver 535.183.01)");
  const auto log = read_file(log_path).value();
  EXPECT_NE(log.find("warning: " + m_cfg.spec_dirs[0] +
                     "/nvidia.yaml was generated for driver 530.30.02, running driver is 535.183.01; building the "
                     "spec in memory"),
            std::string::npos)
      << log;
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libcuda.so.535.183.01"));
}

TEST_F(InjectTest, EveryInjectedHookHasAnExplicitEnvironment) {
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=all"});
  ASSERT_TRUE(inject(config));
  size_t hooks = 0;
  for (const auto& [stage, list] : config["hooks"].items()) {
    for (const auto& hook : list) {
      ++hooks;
      ASSERT_TRUE(hook.contains("env")) << stage;
      EXPECT_FALSE(hook["env"].empty()) << stage;
    }
  }
  EXPECT_GT(hooks, 0u);
}

TEST_F(InjectTest, RequirementsAreCheckedAgainstTheHost) {
  install_spec();
  auto ok = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=12.0 brand=tesla,driver>=535"});
  EXPECT_TRUE(inject(ok));
  auto refused = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=12.5"});
  auto result = inject(refused);
  ASSERT_FALSE(result);
  EXPECT_NE(result.error().message.find("NVIDIA_REQUIRE_CUDA"), std::string::npos) << result.error().message;
  EXPECT_NE(result.error().message.find("12.2"), std::string::npos) << result.error().message;
  // A brand constraint alone reads the GPUs' information files (the T4 is a Tesla).
  auto tesla = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_BRAND=brand=tesla"});
  EXPECT_TRUE(inject(tesla));
  auto geforce = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_BRAND=brand=geforce"});
  auto no_brand = inject(geforce);
  ASSERT_FALSE(no_brand);
  EXPECT_EQ(no_brand.error().message,
            "unsatisfied requirement NVIDIA_REQUIRE_BRAND=\"brand=geforce\": host GPU brand is tesla");
}

TEST_F(InjectTest, MigDevicesByIndexAndUuidOnTheDgx) {
  materialise("dgx-a100");
  install_spec();
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=4:0"});
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  const auto paths = device_paths(config);
  EXPECT_NE(std::ranges::find(paths, "/dev/nvidia4"), paths.end());
  EXPECT_EQ(std::ranges::count_if(paths, [](const std::string& p) { return p.starts_with("/dev/nvidia-caps/"); }), 2);
}

TEST_F(InjectTest, MpsPipeDirectoryOnlyInsideAnMpsRoot) {
  install_spec();
  const std::string pipe = m_cfg.dev_root + "/tmp/nvidia-mps/pipe";
  std::filesystem::create_directories(pipe);
  std::filesystem::create_directories(m_cfg.dev_root + "/etc");
  auto ok = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps/pipe"});
  ASSERT_TRUE(inject(ok));
  EXPECT_TRUE(has_mount(ok, "/tmp/nvidia-mps/pipe"));

  auto etc = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/etc"});
  auto refused = inject(etc);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "CUDA_MPS_PIPE_DIRECTORY: /etc resolves to /etc, outside the MPS pipe roots (/tmp/nvidia-mps, "
            "/run/nvidia/mps; config key mps-pipe-roots)");
  // A symlink inside the root that leads out of it is judged by where it leads.
  std::filesystem::create_symlink("/etc", m_cfg.dev_root + "/tmp/nvidia-mps/escape");
  auto link = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps/escape"});
  refused = inject(link);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("resolves to /etc, outside the MPS pipe roots"), std::string::npos)
      << refused.error().message;
}

TEST_F(InjectTest, InjectDevicesAppliesQualifiedNames) {
  install_spec();
  auto config = runc_config({});
  auto result = inject_devices(config, {"nvidia.com/gpu=all"}, m_cfg, m_log);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(has_mount(config, "/usr/lib/x86_64-linux-gnu/libnvidia-encode.so.535.183.01")) << "every capability";
  auto bad = inject_devices(config, {"nvidia.com/gpu"}, m_cfg, m_log);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "invalid device name \"nvidia.com/gpu\": missing \"=\" (want vendor/class=name)");
}

}  // namespace
}  // namespace gpuctk::hook
