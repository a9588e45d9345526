#include "inject/request.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>

#include <nlohmann/json.hpp>

namespace gpuctk::inject {
namespace {

using Json = nlohmann::ordered_json;
using discover::Capability;
using discover::CapabilitySet;

enum class Privilege { unprivileged, privileged };

// A config.json with `env` and a bounding set that has CAP_SYS_ADMIN only when privileged.
Json with_env(std::initializer_list<std::string> env, Privilege privilege = Privilege::unprivileged) {
  Json config = Json::parse(R"({
    "ociVersion": "1.2.0",
    "process": {
      "args": ["sh"],
      "env": [],
      "capabilities": {"bounding": ["CAP_CHOWN", "CAP_KILL"], "effective": ["CAP_CHOWN"]}
    },
    "root": {"path": "rootfs"}
  })");
  for (const auto& entry : env) {
    config["process"]["env"].push_back(entry);
  }
  if (privilege == Privilege::privileged) {
    config["process"]["capabilities"]["bounding"].push_back("CAP_SYS_ADMIN");
  }
  return config;
}

Request read(const Json& config, const config::RequestConfig& rc = {}) {
  auto result = read_request(config, rc);
  EXPECT_TRUE(result) << result.error().message;
  return result.value_or(Request{});
}

std::string error_of(const Json& config, const config::RequestConfig& rc = {}) {
  auto result = read_request(config, rc);
  return result ? "(no error)" : result.error().message;
}

CapabilitySet caps(std::initializer_list<Capability> list) {
  CapabilitySet set;
  for (const auto c : list) {
    set.add(c);
  }
  return set;
}

bool logged(const Request& request, std::string_view line) {
  return std::ranges::find(request.log, line) != request.log.end();
}

using Strings = std::vector<std::string>;

// ---- NVIDIA_VISIBLE_DEVICES ------------------------------------------------------------------------

TEST(Request, UnsetIsNotAGpuContainer) {
  const auto r = read(with_env({"PATH=/usr/bin"}));
  EXPECT_FALSE(r.gpu_container);
  EXPECT_TRUE(r.devices.empty());
  EXPECT_TRUE(r.capabilities.empty());
}

TEST(Request, EmptyAndVoidAreNotAGpuContainer) {
  for (const auto* value :
       {"NVIDIA_VISIBLE_DEVICES=", "NVIDIA_VISIBLE_DEVICES=  ", "NVIDIA_VISIBLE_DEVICES=void",
        "NVIDIA_VISIBLE_DEVICES=0,void", "NVIDIA_VISIBLE_DEVICES=GPU-abc, void ,1"}) {
    const auto r = read(with_env({value}));
    EXPECT_FALSE(r.gpu_container) << value;
    EXPECT_TRUE(r.devices.empty()) << value;
  }
  EXPECT_TRUE(logged(read(with_env({"NVIDIA_VISIBLE_DEVICES=0,void"})),
                     "not a GPU container: NVIDIA_VISIBLE_DEVICES is void"));
}

TEST(Request, VoidIgnoresEverythingElseEvenBadValues) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=void,xyz", "NVIDIA_DRIVER_CAPABILITIES=bogus",
                                "NVIDIA_REQUIRE_CUDA=cuda>>1", "NVIDIA_MIG_CONFIG_DEVICES=all",
                                "CUDA_MPS_PIPE_DIRECTORY=relative"}));
  EXPECT_FALSE(r.gpu_container);
  EXPECT_FALSE(r.mig_config);
  EXPECT_TRUE(r.requirements.empty());
}

TEST(Request, NoneIsDriverOnly) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=none"}));
  EXPECT_TRUE(r.gpu_container);
  EXPECT_TRUE(r.driver_only);
  EXPECT_FALSE(r.all);
  EXPECT_TRUE(r.devices.empty());
  // "none" with devices is just the devices.
  const auto with_device = read(with_env({"NVIDIA_VISIBLE_DEVICES=none,0"}));
  EXPECT_FALSE(with_device.driver_only);
  EXPECT_EQ(with_device.devices, Strings{"0"});
}

TEST(Request, AllAnywhereInTheList) {
  for (const auto* value : {"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_VISIBLE_DEVICES=0, all ,GPU-abc"}) {
    const auto r = read(with_env({value}));
    EXPECT_TRUE(r.gpu_container) << value;
    EXPECT_TRUE(r.all) << value;
    EXPECT_FALSE(r.driver_only) << value;
    EXPECT_TRUE(r.devices.empty()) << value;
  }
  // Qualified names stay: they may be another vendor's devices.
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=all,vendor.com/nic=0"}));
  EXPECT_TRUE(r.all);
  EXPECT_EQ(r.cdi_devices, Strings{"vendor.com/nic=0"});
}

TEST(Request, IndexesInRequestOrder) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=1,0,3"}));
  EXPECT_TRUE(r.gpu_container);
  EXPECT_FALSE(r.all);
  EXPECT_FALSE(r.driver_only);
  EXPECT_EQ(r.devices, (Strings{"1", "0", "3"}));
  EXPECT_TRUE(r.cdi_devices.empty());
  EXPECT_TRUE(logged(r, R"(request from NVIDIA_VISIBLE_DEVICES: "1,0,3")"));
}

TEST(Request, GpuUuids) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=GPU-4d2a7d5e-96c4-6a8a-0b4c-8f2f2c3b1a10,GPU-0f2e"}));
  EXPECT_EQ(r.devices, (Strings{"GPU-4d2a7d5e-96c4-6a8a-0b4c-8f2f2c3b1a10", "GPU-0f2e"}));
}

TEST(Request, MigIndexesAndUuids) {
  const auto r =
      read(with_env({"NVIDIA_VISIBLE_DEVICES=0:1,MIG-9b3f1c5e-2d1a-5f7b-9a3c-1e4d2b6a8c0f,MIG-GPU-4d2a7d5e-"
                     "96c4-6a8a/1/0"}));
  EXPECT_EQ(r.devices,
            (Strings{"0:1", "MIG-9b3f1c5e-2d1a-5f7b-9a3c-1e4d2b6a8c0f", "MIG-GPU-4d2a7d5e-96c4-6a8a/1/0"}));
}

TEST(Request, QualifiedCdiNames) {
  const auto r =
      read(with_env({"NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu=0,1,nvidia.com/gpu=all,nvidia.com/gpu=0"}));
  EXPECT_TRUE(r.gpu_container);
  EXPECT_FALSE(r.all);  // "nvidia.com/gpu=all" is a CDI device, not the keyword
  EXPECT_EQ(r.cdi_devices, (Strings{"nvidia.com/gpu=0", "nvidia.com/gpu=all"}));
  EXPECT_EQ(r.devices, Strings{"1"});
}

TEST(Request, ReplicaSuffixStrippedAndDeduplicated) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=GPU-a::3,GPU-a::5"}));
  EXPECT_EQ(r.devices, Strings{"GPU-a"});
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0,1,0,0::2"})).devices, (Strings{"0", "1"}));
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=GPU-a::x"})),
            R"(NVIDIA_VISIBLE_DEVICES: invalid replica suffix in "GPU-a::x" (want <id>::<number>))");
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=GPU-a::"})),
            R"(NVIDIA_VISIBLE_DEVICES: invalid replica suffix in "GPU-a::" (want <id>::<number>))");
}

TEST(Request, SurroundingSpacesAndEmptyPiecesIgnored) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=  0 , GPU-abc ,,"}));
  EXPECT_EQ(r.devices, (Strings{"0", "GPU-abc"}));
}

TEST(Request, GarbageIsAnError) {
  constexpr std::string_view k_want =
      "(want an index, GPU-<uuid>, <gpu>:<mig>, MIG-<uuid>, a CDI name, all, none or void)";
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=xyz"})),
            "NVIDIA_VISIBLE_DEVICES: invalid device \"xyz\" " + std::string(k_want));
  for (const auto* bad :
       {"GPU-", "GPU-xyz", "gpu-abc", "0:", ":1", "0:1:2", "-1", "MIG-", "MIG-GPU-abc/1", "ALL"}) {
    EXPECT_EQ(
        error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0," + std::string(bad)})),
        "NVIDIA_VISIBLE_DEVICES: invalid device " + std::string("\"") + bad + "\" " + std::string(k_want))
        << bad;
  }
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=nvidia.com/gpu"})),
            "NVIDIA_VISIBLE_DEVICES: invalid device \"nvidia.com/gpu\" " + std::string(k_want));
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=nvidia.com=0"})),
      R"(NVIDIA_VISIBLE_DEVICES: invalid device name "nvidia.com=0": missing "/" (want vendor/class=name))");
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"})),
      "NVIDIA_VISIBLE_DEVICES: invalid device \"/var/run/nvidia-container-devices\" " + std::string(k_want) +
          "; this is the device plugin's volume-mounts strategy, which needs accept-volume-mounts: true");
}

TEST(Request, LastOccurrenceOfAVariableWins) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_VISIBLE_DEVICES=1"}));
  EXPECT_TRUE(r.gpu_container);
  EXPECT_EQ(r.devices, Strings{"1"});
  EXPECT_FALSE(read(with_env({"NVIDIA_VISIBLE_DEVICES=1", "NVIDIA_VISIBLE_DEVICES=void"})).gpu_container);
}

TEST(Request, MalformedEnvEntriesAreSkipped) {
  Json config = with_env({"NVIDIA_VISIBLE_DEVICES", "=0", "NVIDIA_VISIBLE_DEVICES=2"});
  config["process"]["env"].push_back(42);
  EXPECT_EQ(read(config).devices, Strings{"2"});
  EXPECT_FALSE(read(Json::parse(R"({"ociVersion": "1.2.0"})")).gpu_container);
  EXPECT_FALSE(read(Json::parse(R"({"process": {"env": "NVIDIA_VISIBLE_DEVICES=0"}})")).gpu_container);
}

// ---- legacy CUDA images --------------------------------------------------------------------------

TEST(Request, LegacyCudaImageRequestsAllWithAllCapabilitiesAndACudaRequirement) {
  const auto r = read(with_env({"CUDA_VERSION=12.4.1"}));
  EXPECT_TRUE(r.gpu_container);
  EXPECT_TRUE(r.all);
  EXPECT_EQ(r.capabilities, CapabilitySet::all());
  ASSERT_EQ(r.requirements.size(), 1u);
  EXPECT_EQ(r.requirements[0].variable, "CUDA_VERSION");
  EXPECT_EQ(r.requirements[0].expression, "cuda>=12.4");
  EXPECT_TRUE(logged(r, "legacy CUDA image: requiring cuda>=12.4 (from CUDA_VERSION=12.4.1)"));
  EXPECT_EQ(read(with_env({"CUDA_VERSION=11"})).requirements[0].expression, "cuda>=11.0");
}

TEST(Request, ImageWithRequireCudaIsNotLegacy) {
  const auto r = read(with_env({"CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.4 brand=tesla"}));
  EXPECT_FALSE(r.gpu_container);
  EXPECT_FALSE(r.all);
  // Asked for explicitly: default capabilities, only the image's own requirement.
  const auto explicit_request =
      read(with_env({"CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_CUDA=cuda>=12.4", "NVIDIA_VISIBLE_DEVICES=0"}));
  EXPECT_EQ(explicit_request.capabilities, caps({Capability::utility, Capability::compute}));
  ASSERT_EQ(explicit_request.requirements.size(), 1u);
  EXPECT_EQ(explicit_request.requirements[0].variable, "NVIDIA_REQUIRE_CUDA");
}

TEST(Request, LegacyCudaImageWithExplicitDevices) {
  const auto r =
      read(with_env({"CUDA_VERSION=12.2.0", "NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES="}));
  EXPECT_FALSE(r.all);
  EXPECT_EQ(r.devices, Strings{"0"});
  EXPECT_EQ(r.capabilities, caps({Capability::utility, Capability::compute}));  // set but empty: the default
  ASSERT_EQ(r.requirements.size(), 1u);
  EXPECT_EQ(r.requirements[0].expression, "cuda>=12.2");
}

TEST(Request, LegacyCudaImageWithBadCudaVersion) {
  EXPECT_EQ(error_of(with_env({"CUDA_VERSION=twelve"})),
            R"(CUDA_VERSION: invalid version "twelve" (want major.minor[.patch]))");
}

// ---- NVIDIA_DRIVER_CAPABILITIES ------------------------------------------------------------------

TEST(Request, CapabilitiesDefaultToUtilityCompute) {
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0"})).capabilities,
            caps({Capability::utility, Capability::compute}));
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES= "})).capabilities,
            caps({Capability::utility, Capability::compute}));
  config::RequestConfig rc;
  rc.supported_capabilities = caps({Capability::utility, Capability::video});
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0"}), rc).capabilities, caps({Capability::utility}));
}

TEST(Request, CapabilitiesAllAndLists) {
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=all"})).capabilities,
            CapabilitySet::all());
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES= video , graphics"}))
                .capabilities,
            caps({Capability::video, Capability::graphics}));
  config::RequestConfig rc;
  rc.supported_capabilities = caps({Capability::utility, Capability::compute});
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=all"}), rc).capabilities,
            caps({Capability::utility, Capability::compute}));
}

TEST(Request, CapabilitiesGarbageAndUnsupported) {
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute,bogus"})),
            "NVIDIA_DRIVER_CAPABILITIES: unknown driver capability \"bogus\" "
            "(known: utility, compute, video, graphics, display, ngx, compat32, all)");
  config::RequestConfig rc;
  rc.supported_capabilities = caps({Capability::utility, Capability::compute});
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute,video"}), rc),
      R"(NVIDIA_DRIVER_CAPABILITIES: unsupported driver capability "video" (supported: utility, compute))");
  EXPECT_EQ(
      read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute"}), rc).capabilities,
      caps({Capability::compute}));
}

// ---- NVIDIA_REQUIRE_* ----------------------------------------------------------------------------

TEST(Request, RequirementsFromEveryRequireVariableSortedByName) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_DRIVER=driver>=535",
                                "NVIDIA_REQUIRE_CUDA=cuda>=12.2 brand=tesla",
                                "NVIDIA_REQUIRE_JETPACK=csv-mounts=all", "NVIDIA_REQUIRE_EMPTY="}));
  ASSERT_EQ(r.requirements.size(), 2u);
  EXPECT_EQ(r.requirements[0].variable, "NVIDIA_REQUIRE_CUDA");
  EXPECT_EQ(r.requirements[0].any_of.size(), 2u);
  EXPECT_EQ(r.requirements[1].variable, "NVIDIA_REQUIRE_DRIVER");
  EXPECT_EQ(r.requirements[1].expression, "driver>=535");
}

TEST(Request, MalformedRequirementNamesTheVariable) {
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_ARCH=arch>>8"})),
      R"(NVIDIA_REQUIRE_ARCH: invalid constraint "arch>>8": ">8" is not a version (want dotted numbers like 12.4))");
}

TEST(Request, DisableRequireByEnv) {
  for (const auto* value : {"1", "t", "T", "TRUE", "true", "True"}) {
    const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=99",
                                  "NVIDIA_DISABLE_REQUIRE=" + std::string(value)}));
    EXPECT_TRUE(r.requirements.empty()) << value;
  }
  const auto r = read(
      with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=99", "NVIDIA_DISABLE_REQUIRE=1"}));
  EXPECT_TRUE(logged(r, "requirements not checked: NVIDIA_DISABLE_REQUIRE=1"));
  // Not Go-true: still required. A disabled requirement is not even parsed.
  for (const auto* value : {"yes", "0", "false", "", " true"}) {
    const auto kept = read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>=99",
                                     "NVIDIA_DISABLE_REQUIRE=" + std::string(value)}));
    EXPECT_EQ(kept.requirements.size(), 1u) << value;
  }
  EXPECT_TRUE(read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_CUDA=cuda>>1",
                             "NVIDIA_DISABLE_REQUIRE=true"}))
                  .requirements.empty());
}

TEST(Request, DisableRequireByConfig) {
  config::RequestConfig rc;
  rc.disable_require = true;
  const auto r = read(with_env({"CUDA_VERSION=12.4.1", "NVIDIA_REQUIRE_ARCH=arch>=8.0"}), rc);
  EXPECT_TRUE(r.all);
  EXPECT_TRUE(r.requirements.empty());
  EXPECT_TRUE(logged(r, "requirements not checked: disable-require is set in the configuration"));
}

// ---- MIG config / monitor ------------------------------------------------------------------------

TEST(Request, MigConfigAndMonitorForPrivilegedContainers) {
  const auto r = read(with_env(
      {"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_MIG_CONFIG_DEVICES=all", "NVIDIA_MIG_MONITOR_DEVICES=all"},
      Privilege::privileged));
  EXPECT_TRUE(r.privileged);
  EXPECT_TRUE(r.mig_config);
  EXPECT_TRUE(r.mig_monitor);
  const auto monitor_only =
      read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_MIG_MONITOR_DEVICES=all"}, Privilege::privileged));
  EXPECT_FALSE(monitor_only.mig_config);
  EXPECT_TRUE(monitor_only.mig_monitor);
}

TEST(Request, MigConfigAndMonitorRefusedForUnprivilegedContainers) {
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_MIG_CONFIG_DEVICES=all"})),
      "NVIDIA_MIG_CONFIG_DEVICES: only privileged containers (CAP_SYS_ADMIN) may request MIG configuration");
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_MIG_MONITOR_DEVICES=all"})),
      "NVIDIA_MIG_MONITOR_DEVICES: only privileged containers (CAP_SYS_ADMIN) may request MIG monitoring");
  // Set but empty counts as unset.
  EXPECT_FALSE(read(with_env({"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_MIG_CONFIG_DEVICES="})).mig_config);
}

TEST(Request, MigConfigValueMustBeAll) {
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_MIG_CONFIG_DEVICES=0"},
                              Privilege::privileged)),
            R"(NVIDIA_MIG_CONFIG_DEVICES: invalid value "0" (only "all" is supported))");
}

// ---- privilege -----------------------------------------------------------------------------------

TEST(Request, PrivilegeIsSysAdminInTheBoundingSet) {
  EXPECT_TRUE(is_privileged(with_env({}, Privilege::privileged)));
  EXPECT_FALSE(is_privileged(with_env({})));
  // Only the bounding set counts.
  EXPECT_FALSE(is_privileged(Json::parse(
      R"({"process": {"capabilities": {"bounding": ["CAP_CHOWN"], "effective": ["CAP_SYS_ADMIN"]}}})")));
  // Pre-1.0 OCI: capabilities is a flat list.
  EXPECT_TRUE(is_privileged(Json::parse(R"({"process": {"capabilities": ["CAP_CHOWN", "CAP_SYS_ADMIN"]}})")));
  EXPECT_FALSE(is_privileged(Json::parse(R"({"process": {"capabilities": ["CAP_CHOWN"]}})")));
  // Missing or malformed: not privileged.
  EXPECT_FALSE(is_privileged(Json::parse(R"({})")));
  EXPECT_FALSE(is_privileged(Json::parse(R"({"process": {"capabilities": {"bounding": "CAP_SYS_ADMIN"}}})")));
  EXPECT_FALSE(is_privileged(Json::parse(R"({"process": "x"})")));
  EXPECT_FALSE(is_privileged(Json::parse(R"([1, 2])")));
}

TEST(Request, UnprivilegedEnvIgnoredWhenNotAccepted) {
  config::RequestConfig rc;
  rc.accept_envvar_when_unprivileged = false;
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=all"}), rc);
  EXPECT_FALSE(r.gpu_container);
  EXPECT_FALSE(r.all);
  EXPECT_EQ(r.log, Strings{"ignoring NVIDIA_VISIBLE_DEVICES from an unprivileged container"});
  const auto legacy = read(with_env({"CUDA_VERSION=12.4.1"}), rc);
  EXPECT_FALSE(legacy.gpu_container);
  EXPECT_EQ(legacy.log, Strings{"ignoring the legacy CUDA image's implicit NVIDIA_VISIBLE_DEVICES=all from "
                                "an unprivileged container"});
  // Privileged: honoured.
  const auto privileged = read(with_env({"NVIDIA_VISIBLE_DEVICES=all"}, Privilege::privileged), rc);
  EXPECT_TRUE(privileged.gpu_container);
  EXPECT_TRUE(privileged.all);
  // Accepted by default.
  EXPECT_TRUE(read(with_env({"NVIDIA_VISIBLE_DEVICES=all"})).all);
}

// ---- volume mounts -------------------------------------------------------------------------------

Json with_mounts() {
  return Json::parse(R"({
    "ociVersion": "1.2.0",
    "process": {"env": ["NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices"],
                "capabilities": {"bounding": ["CAP_CHOWN"]}},
    "mounts": [
      {"destination": "/proc", "type": "proc", "source": "proc"},
      {"destination": "/var/run/nvidia-container-devices/GPU-4d2a7d5e::2", "type": "bind", "source": "/dev/null"},
      {"destination": "/var/run/nvidia-container-devices/1", "type": "bind", "source": "/dev/null"},
      {"destination": "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu/0", "type": "bind", "source": "/dev/null"},
      {"destination": "/var/run/nvidia-container-devices/cdi/k8s.device-plugin.nvidia.com/gpu=GPU-4d2a",
       "type": "bind", "source": "/dev/null"},
      {"destination": "/var/run/nvidia-container-devices/imex/3", "type": "bind", "source": "/dev/null"},
      {"destination": "/var/run/nvidia-container-devices/7", "type": "bind", "source": "/etc/hosts"}
    ]
  })");
}

TEST(Request, VolumeMountsWhenAccepted) {
  config::RequestConfig rc;
  rc.accept_volume_mounts = true;
  const auto r = read(with_mounts(), rc);
  EXPECT_TRUE(r.gpu_container);
  EXPECT_EQ(r.devices, (Strings{"GPU-4d2a7d5e", "1"}));
  EXPECT_EQ(r.cdi_devices, (Strings{"nvidia.com/gpu=0", "k8s.device-plugin.nvidia.com/gpu=GPU-4d2a"}));
  EXPECT_EQ(r.imex_channels, (std::vector<uint32_t>{3}));
  EXPECT_EQ(r.log,
            (Strings{
                "request from volume mounts: GPU-4d2a7d5e,1,nvidia.com/gpu=0,"
                "k8s.device-plugin.nvidia.com/gpu=GPU-4d2a",
                "ignoring NVIDIA_VISIBLE_DEVICES: devices were requested by annotation or volume mount",
                "IMEX channels from volume mounts: 3",
            }));
}

TEST(Request, VolumeMountsIgnoredByDefault) {
  // The env then carries the plugin's placeholder, which is not a device.
  EXPECT_EQ(
      error_of(with_mounts()),
      "NVIDIA_VISIBLE_DEVICES: invalid device \"/var/run/nvidia-container-devices\" (want an index, "
      "GPU-<uuid>, <gpu>:<mig>, MIG-<uuid>, a CDI name, all, none or void); this is the device plugin's "
      "volume-mounts strategy, which needs accept-volume-mounts: true");
  Json config = with_mounts();
  config["process"]["env"] = Json::array({"NVIDIA_VISIBLE_DEVICES=void"});
  const auto r = read(config);
  EXPECT_FALSE(r.gpu_container);
  EXPECT_EQ(r.log.front(),
            "ignoring 5 device request(s) by volume mount under /var/run/nvidia-container-devices/ "
            "(accept-volume-mounts is off)");
}

TEST(Request, VolumeMountAllAndErrors) {
  config::RequestConfig rc;
  rc.accept_volume_mounts = true;
  const auto mount = [](std::string_view destination) {
    Json config = with_env({});
    config["mounts"] =
        Json::array({{{"destination", destination}, {"type", "bind"}, {"source", "/dev/null"}}});
    return config;
  };
  EXPECT_TRUE(read(mount("/var/run/nvidia-container-devices/all"), rc).all);
  EXPECT_EQ(error_of(mount("/var/run/nvidia-container-devices/xyz"), rc),
            "volume mount /var/run/nvidia-container-devices/xyz: invalid device \"xyz\" "
            "(want an index, GPU-<uuid>, <gpu>:<mig>, MIG-<uuid> or all)");
  EXPECT_EQ(error_of(mount("/var/run/nvidia-container-devices/../../etc"), rc),
            "volume mount /var/run/nvidia-container-devices/../../etc: invalid device \"../../etc\" "
            "(want an index, GPU-<uuid>, <gpu>:<mig>, MIG-<uuid> or all)");
  EXPECT_EQ(error_of(mount("/var/run/nvidia-container-devices/cdi/nvidia.com/gpu"), rc),
            "volume mount /var/run/nvidia-container-devices/cdi/nvidia.com/gpu: invalid device name "
            "\"nvidia.com=gpu\": missing \"/\" (want vendor/class=name)");
}

// ---- IMEX channels -------------------------------------------------------------------------------

using Channels = std::vector<uint32_t>;

// A GPU container (GPU 0) with `imex` appended to its environment and /dev/null mounted on each of
// `mounts` (paths under /var/run/nvidia-container-devices/imex/).
Json with_imex(std::initializer_list<std::string> imex, std::initializer_list<std::string> mounts = {},
               Privilege privilege = Privilege::unprivileged) {
  Json config = with_env({"NVIDIA_VISIBLE_DEVICES=0"}, privilege);
  for (const auto& entry : imex) {
    config["process"]["env"].push_back(entry);
  }
  config["mounts"] = Json::array();
  for (const auto& channel : mounts) {
    config["mounts"].push_back({{"destination", "/var/run/nvidia-container-devices/imex/" + channel},
                                {"type", "bind"},
                                {"source", "/dev/null"}});
  }
  return config;
}

TEST(Request, ImexChannelsFromTheVariable) {
  const auto r = read(with_imex({"NVIDIA_IMEX_CHANNELS=3, 0,channel7,3,,"}));
  EXPECT_EQ(r.imex_channels, (Channels{3, 0, 7}));
  EXPECT_FALSE(r.imex_all);
  EXPECT_TRUE(logged(r, "IMEX channels from NVIDIA_IMEX_CHANNELS: 3,0,7"));
  EXPECT_EQ(read(with_imex({"NVIDIA_IMEX_CHANNELS=1048575"})).imex_channels, (Channels{1048575}));
}

// Only a GPU container's channels are read, as NVIDIA's toolkit reads them only beside devices.
TEST(Request, ImexChannelsOfAContainerWithoutGpusAreNotRead) {
  const auto r = read(with_env({"NVIDIA_IMEX_CHANNELS=0", "NVIDIA_VISIBLE_DEVICES=void"}));
  EXPECT_FALSE(r.gpu_container);
  EXPECT_TRUE(r.imex_channels.empty());
  EXPECT_EQ(error_of(with_env({"NVIDIA_IMEX_CHANNELS=xyz"})), "(no error)");
}

TEST(Request, ImexAllNoneVoidAndEmptyGiveNoChannel) {
  for (const auto* value : {"NVIDIA_IMEX_CHANNELS=", "NVIDIA_IMEX_CHANNELS=none", "NVIDIA_IMEX_CHANNELS=void",
                            "NVIDIA_IMEX_CHANNELS=0,none", "NVIDIA_IMEX_CHANNELS=void,xyz",
                            "NVIDIA_IMEX_CHANNELS=all", "NVIDIA_IMEX_CHANNELS=1,all"}) {
    const auto r = read(with_imex({value}));
    EXPECT_TRUE(r.gpu_container) << value;
    EXPECT_TRUE(r.imex_channels.empty()) << value;
    EXPECT_FALSE(r.imex_all) << value;
  }
  EXPECT_TRUE(logged(read(with_imex({"NVIDIA_IMEX_CHANNELS=1,all"})),
                     "ignoring NVIDIA_IMEX_CHANNELS=\"1,all\": \"all\" gives no IMEX channel, as in "
                     "NVIDIA's toolkit (name the channels)"));
}

TEST(Request, InvalidImexChannelsAreRefused) {
  for (const auto* bad : {"xyz", "-1", "+1", "1048576", "99999999999999999999", "007", "channel", "0x1",
                          "1.0", "channel-1", "CHANNEL1"}) {
    EXPECT_EQ(error_of(with_imex({"NVIDIA_IMEX_CHANNELS=1," + std::string(bad)})),
              "NVIDIA_IMEX_CHANNELS: invalid IMEX channel \"" + std::string(bad) +
                  "\" (want a channel number from 0 to 1048575, channel<N>, none or void)")
        << bad;
  }
  EXPECT_EQ(error_of(with_imex({"NVIDIA_IMEX_CHANNELS=1\n2"})),
            "NVIDIA_IMEX_CHANNELS: invalid IMEX channel \"1\\n2\" (want a channel number from 0 to "
            "1048575, channel<N>, none or void)");
}

TEST(Request, ImexChannelsAreBounded) {
  config::RequestConfig rc;
  rc.max_devices = 4;
  EXPECT_EQ(read(with_imex({"NVIDIA_IMEX_CHANNELS=0,1,2,3,3,2"}), rc).imex_channels, (Channels{0, 1, 2, 3}));
  EXPECT_EQ(error_of(with_imex({"NVIDIA_IMEX_CHANNELS=0,1,2,3,4"}), rc),
            "NVIDIA_IMEX_CHANNELS: more than 4 IMEX channels requested (the limit per container)");
  std::string huge = "NVIDIA_IMEX_CHANNELS=";
  huge.append(k_max_env_value + 1, '1');
  EXPECT_EQ(error_of(with_imex({huge})), "NVIDIA_IMEX_CHANNELS: value of " +
                                             std::to_string(k_max_env_value + 1) +
                                             " bytes is longer than the limit of 131072 bytes");
}

TEST(Request, ImexVariableFollowsThePrivilegeRule) {
  config::RequestConfig rc;
  rc.accept_envvar_when_unprivileged = false;
  const auto ignored = read(with_imex({"NVIDIA_IMEX_CHANNELS=0"}, {"0"}), rc);
  // Not a GPU container either: NVIDIA_VISIBLE_DEVICES is ignored by the same rule.
  EXPECT_TRUE(ignored.imex_channels.empty());
  Json annotated = with_imex({"NVIDIA_IMEX_CHANNELS=0"});
  annotated["annotations"] = {{"cdi.k8s.io/x", "nvidia.com/gpu=0"}};
  const auto r = read(annotated, rc);
  EXPECT_TRUE(r.gpu_container);
  EXPECT_TRUE(r.imex_channels.empty());
  EXPECT_TRUE(logged(r, "ignoring NVIDIA_IMEX_CHANNELS from an unprivileged container"));
  EXPECT_EQ(read(with_imex({"NVIDIA_IMEX_CHANNELS=0"}, {}, Privilege::privileged), rc).imex_channels,
            (Channels{0}));
}

TEST(Request, ImexVolumeMountsWinOverTheVariable) {
  config::RequestConfig rc;
  rc.accept_volume_mounts = true;
  const auto r = read(with_imex({"NVIDIA_IMEX_CHANNELS=5"}, {"2", "channel9", "2"}), rc);
  EXPECT_EQ(r.imex_channels, (Channels{2, 9}));
  EXPECT_TRUE(logged(r, "ignoring NVIDIA_IMEX_CHANNELS: IMEX channels were requested by volume mount"));
  EXPECT_TRUE(logged(r, "IMEX channels from volume mounts: 2,9"));
  const auto all = read(with_imex({}, {"all", "4"}), rc);
  EXPECT_TRUE(all.imex_all);
  EXPECT_EQ(all.imex_channels, (Channels{4}));
  EXPECT_TRUE(logged(all, "IMEX channels from volume mounts: all,4"));
  EXPECT_EQ(error_of(with_imex({}, {"../../dev/sda"}), rc),
            "volume mount /var/run/nvidia-container-devices/imex/../../dev/sda: invalid IMEX channel "
            "\"../../dev/sda\" (want a channel number from 0 to 1048575, channel<N> or all)");
  EXPECT_EQ(error_of(with_imex({}, {"none"}), rc),
            "volume mount /var/run/nvidia-container-devices/imex/none: invalid IMEX channel \"none\" (want a "
            "channel number from 0 to 1048575, channel<N> or all)");
}

TEST(Request, ImexVolumeMountsNeedAcceptVolumeMounts) {
  const auto r = read(with_imex({"NVIDIA_IMEX_CHANNELS=5"}, {"2"}));
  EXPECT_EQ(r.imex_channels, (Channels{5}));
  EXPECT_FALSE(r.imex_all);
}

// ---- NVIDIA_GDS, NVIDIA_MOFED, NVIDIA_GDRCOPY, NVIDIA_NVSWITCH -------------------------------------

using Features = std::vector<discover::GatedFeature>;

TEST(Request, GatedFeaturesAreExactlyEnabledInTableOrder) {
  using discover::GatedFeature;
  const auto r =
      read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_NVSWITCH=enabled", "NVIDIA_GDS=enabled",
                     "NVIDIA_MOFED=Enabled", "NVIDIA_GDRCOPY= enabled", "NVIDIA_GDRCOPY=enabled"}));
  EXPECT_EQ(r.gated_features, (Features{GatedFeature::gds, GatedFeature::gdrcopy, GatedFeature::nvswitch}));
  EXPECT_TRUE(logged(r, "NVIDIA_GDS=enabled: GPUDirect Storage devices"));
  EXPECT_TRUE(logged(r, "NVIDIA_NVSWITCH=enabled: NVSwitch devices"));
  for (const auto* value :
       {"NVIDIA_MOFED=true", "NVIDIA_MOFED=1", "NVIDIA_MOFED=enabled ", "NVIDIA_MOFED="}) {
    EXPECT_TRUE(read(with_env({"NVIDIA_VISIBLE_DEVICES=none", value})).gated_features.empty()) << value;
  }
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=none", "NVIDIA_MOFED=enabled"})).gated_features,
            (Features{GatedFeature::mofed}));
}

TEST(Request, GatedFeaturesOnlyBesideGpus) {
  EXPECT_TRUE(read(with_env({"NVIDIA_GDS=enabled"})).gated_features.empty());
  EXPECT_TRUE(read(with_env({"NVIDIA_VISIBLE_DEVICES=void", "NVIDIA_GDS=enabled"})).gated_features.empty());
}

// ---- annotations ---------------------------------------------------------------------------------

TEST(Request, AnnotationsInSortedKeyOrder) {
  const auto r = read(Json::parse(R"({
    "process": {"env": ["NVIDIA_VISIBLE_DEVICES=3"], "capabilities": {"bounding": []}},
    "annotations": {
      "cdi.k8s.io/zz": "nvidia.com/gpu=1, vendor.com/nic=eth0",
      "io.kubernetes.cri.sandbox-id": "abc",
      "cdi.k8s.io/nvidia-device-plugin_1234": "k8s.device-plugin.nvidia.com/gpu=GPU-4d2a,nvidia.com/gpu=1"
    }
  })"));
  EXPECT_TRUE(r.gpu_container);
  EXPECT_TRUE(r.devices.empty());
  EXPECT_EQ(r.cdi_devices, (Strings{"k8s.device-plugin.nvidia.com/gpu=GPU-4d2a", "nvidia.com/gpu=1",
                                    "vendor.com/nic=eth0"}));
  EXPECT_EQ(r.capabilities, caps({Capability::utility, Capability::compute}));
  EXPECT_EQ(r.log,
            (Strings{
                "request from annotation cdi.k8s.io/nvidia-device-plugin_1234: "
                "k8s.device-plugin.nvidia.com/gpu=GPU-4d2a,nvidia.com/gpu=1",
                "request from annotation cdi.k8s.io/zz: nvidia.com/gpu=1,vendor.com/nic=eth0",
                "ignoring NVIDIA_VISIBLE_DEVICES: devices were requested by annotation or volume mount",
            }));
}

TEST(Request, AnnotationPrefixesFromConfig) {
  const Json config = Json::parse(R"({"annotations": {"example.com/gpus": "nvidia.com/gpu=0"}})");
  EXPECT_FALSE(read(config).gpu_container);
  config::RequestConfig rc;
  rc.annotation_prefixes = {"", "example.com/"};
  EXPECT_EQ(read(config, rc).cdi_devices, Strings{"nvidia.com/gpu=0"});
}

TEST(Request, BadAnnotationValues) {
  EXPECT_EQ(error_of(Json::parse(R"({"annotations": {"cdi.k8s.io/x": "nvidia.com/gpu=0,0"}})")),
            R"(annotation cdi.k8s.io/x: invalid device name "0": missing "=" (want vendor/class=name))");
  EXPECT_EQ(error_of(Json::parse(R"({"annotations": {"cdi.k8s.io/x": "nvidia.com/gpu=0,"}})")),
            R"(annotation cdi.k8s.io/x: empty device name in "nvidia.com/gpu=0,")");
  EXPECT_EQ(error_of(Json::parse(R"({"annotations": {"cdi.k8s.io/x": ""}})")),
            R"(annotation cdi.k8s.io/x: empty device name in "")");
  EXPECT_EQ(error_of(Json::parse(R"({"annotations": {"cdi.k8s.io/x": 3}})")),
            "annotation cdi.k8s.io/x: value is not a string");
}

// ---- MPS -----------------------------------------------------------------------------------------

TEST(Request, MpsPipeDirectory) {
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/mps/nvidia.com/gpu/pipe"}))
                .mps_pipe_directory,
            "/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0"})).mps_pipe_directory, "");
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY="})).mps_pipe_directory, "");
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=mps/pipe"})),
            R"(CUDA_MPS_PIPE_DIRECTORY: "mps/pipe" is not an absolute path)");
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/mps/../etc"})),
            R"(CUDA_MPS_PIPE_DIRECTORY: "/mps/../etc" must not contain "..")");
}

TEST(Request, MpsLogDirectoryAndCleanedPaths) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/mps//gpu/./pipe/",
                                "CUDA_MPS_LOG_DIRECTORY=/mps/gpu/log"}));
  EXPECT_EQ(r.mps_pipe_directory, "/mps/gpu/pipe");
  EXPECT_EQ(r.mps_log_directory, "/mps/gpu/log");
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_LOG_DIRECTORY=/run/nvidia/mps/../../../etc"})),
      R"(CUDA_MPS_LOG_DIRECTORY: "/run/nvidia/mps/../../../etc" must not contain "..")");
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/" + std::string(5000, 'a')})),
      "CUDA_MPS_PIPE_DIRECTORY: value of 5001 bytes is longer than the limit of 4096 bytes");
}

// ---- limits: everything a container controls is bounded and parsed in linear time -----------------

std::string numbered(std::string_view prefix, size_t count, std::string_view separator = ",") {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    out.append(i == 0 ? "" : separator).append(prefix).append(std::to_string(i));
  }
  return out;
}

// A config with `count` request annotations "cdi.k8s.io/k<i>": "vendor.com/dev=d<i>". Built on the
// ordered_json's vector directly: inserting key by key scans the object each time (quadratic).
Json with_annotations(size_t count) {
  Json config = with_env({});
  Json annotations = Json::object();
  auto& items = static_cast<Json::object_t::Container&>(annotations.get_ref<Json::object_t&>());
  items.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    items.emplace_back("cdi.k8s.io/k" + std::to_string(i), "vendor.com/dev=d" + std::to_string(i));
  }
  config["annotations"] = std::move(annotations);
  return config;
}

TEST(Request, AtMostMaxDevicesFromTheEnvironment) {
  const auto r = read(with_env({"NVIDIA_VISIBLE_DEVICES=" + numbered("", config::k_max_devices)}));
  EXPECT_EQ(r.devices.size(), config::k_max_devices);
  // Duplicates and replicas do not count.
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=" + numbered("", config::k_max_devices - 1) +
                           ",0,1::3,GPU-a::1,GPU-a::2"}))
                .devices.size(),
            config::k_max_devices);
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=" + numbered("", config::k_max_devices + 1)})),
            "NVIDIA_VISIBLE_DEVICES: more than 4096 devices requested (the limit per container)");
  EXPECT_EQ(
      error_of(with_env({"NVIDIA_VISIBLE_DEVICES=" + numbered("vendor.com/xx=", config::k_max_devices + 1)})),
      "NVIDIA_VISIBLE_DEVICES: more than 4096 devices requested (the limit per container)");
}

TEST(Request, AtMostMaxDevicesFromAnnotationsAndVolumeMounts) {
  Json config = with_env({});
  config["annotations"] = {{"cdi.k8s.io/a", numbered("vendor.com/xx=", 4000)},
                           {"cdi.k8s.io/b", numbered("vendor.com/yy=", 200)}};
  EXPECT_EQ(error_of(config),
            "annotation cdi.k8s.io/b: more than 4096 devices requested (the limit per container)");

  config::RequestConfig rc;
  rc.accept_volume_mounts = true;
  Json mounts = with_env({});
  mounts["mounts"] = Json::array();
  for (size_t i = 0; i <= config::k_max_devices; ++i) {
    mounts["mounts"].push_back(
        {{"destination", "/var/run/nvidia-container-devices/" + std::to_string(i)}, {"source", "/dev/null"}});
  }
  EXPECT_EQ(
      error_of(mounts, rc),
      "volume mount /var/run/nvidia-container-devices/4096: more than 4096 devices requested (the limit per "
      "container)");
}

TEST(Request, AtMostMaxDevicesRequestAnnotations) {
  EXPECT_EQ(read(with_annotations(config::k_max_devices)).cdi_devices.size(), config::k_max_devices);
  EXPECT_EQ(
      error_of(with_annotations(config::k_max_devices + 1)),
      "more than 4096 annotations with a request prefix (cdi.k8s.io/; the limit is the device limit per "
      "container)");
  // Other annotations are not counted.
  Json config = with_annotations(10);
  for (size_t i = 0; i < 2 * config::k_max_devices; ++i) {
    config["annotations"]["io.kubernetes.x" + std::to_string(i)] = "y";
  }
  EXPECT_EQ(read(config).cdi_devices.size(), 10u);
}

TEST(Request, AnnotationKeyAndValueSizesAreBounded) {
  Json config = with_env({});
  config["annotations"] = {{"cdi.k8s.io/" + std::string(k_max_annotation_key, 'k'), "vendor.com/x=0"}};
  EXPECT_EQ(error_of(config),
            "annotation key of 1035 bytes with a request prefix is longer than the limit of 1024 bytes");
  config["annotations"] = {{"cdi.k8s.io/x", "vendor.com/x=" + std::string(k_max_annotation_value, 'v')}};
  EXPECT_EQ(error_of(config),
            "annotation cdi.k8s.io/x: value of 262157 bytes is longer than the limit of 262144 bytes");
}

TEST(Request, EnvironmentValuesGpuctkParsesAreBounded) {
  const std::string big(k_max_env_value + 1, ' ');
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0" + big})),
            "NVIDIA_VISIBLE_DEVICES: value of 131074 bytes is longer than the limit of 131072 bytes");
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_DRIVER_CAPABILITIES=compute" + big})),
            "NVIDIA_DRIVER_CAPABILITIES: value of 131080 bytes is longer than the limit of 131072 bytes");
  EXPECT_EQ(error_of(with_env({"NVIDIA_VISIBLE_DEVICES=0", "NVIDIA_REQUIRE_X=cuda>=1" + big})),
            "NVIDIA_REQUIRE_X: value of 131080 bytes is longer than the limit of 131072 bytes");
  // Not a GPU container: nothing else is read, nothing else can fail.
  EXPECT_FALSE(read(with_env({"NVIDIA_DRIVER_CAPABILITIES=compute" + big})).gpu_container);
  // Variables gpuctk does not read are not looked at at all.
  EXPECT_EQ(read(with_env({"NVIDIA_VISIBLE_DEVICES=0", "HUGE=" + big})).devices, Strings{"0"});
}

TEST(Request, AtMostMaxRequirementVariables) {
  Json config = with_env({"NVIDIA_VISIBLE_DEVICES=0"});
  for (size_t i = 0; i < k_max_requirements; ++i) {
    config["process"]["env"].push_back("NVIDIA_REQUIRE_" + std::to_string(i) + "=cuda>=1.0");
  }
  EXPECT_EQ(read(config).requirements.size(), k_max_requirements);
  config["process"]["env"].push_back("NVIDIA_REQUIRE_X=cuda>=1.0");
  EXPECT_EQ(error_of(config), "more than 64 NVIDIA_REQUIRE_* variables (the limit)");
}

// Before sets for de-duplication (and one pass over the annotations), 100000 distinct ids by volume
// mount or 50000 annotations took about 9 s each (quadratic); both take well under a second now. The
// bound is loose for sanitizer builds and busy machines and still far below quadratic.
// Large requests parse correctly. Speed is measured in bench/ (never asserted here); these sizes took 6 to
// 13 s each with the old quadratic parsing, against milliseconds now, so a regression shows as a slow test.
TEST(Request, LargeRequestsParseWithTheLimitsLifted) {
  config::RequestConfig rc;
  rc.max_devices = 1'000'000;
  rc.accept_volume_mounts = true;
  const auto devices_of = [&](const Json& config) -> size_t {
    auto r = read_request(config, rc);
    EXPECT_TRUE(r) << r.error().message;
    return r ? r->devices.size() + r->cdi_devices.size() : 0;
  };
  // 20000 ids is what fits into the kernel's limit for one environment string.
  EXPECT_EQ(devices_of(with_env({"NVIDIA_VISIBLE_DEVICES=" + numbered("", 20'000)})), 20'000u);
  Json mounts = with_env({});
  mounts["mounts"] = Json::array();
  for (size_t i = 0; i < 100'000; ++i) {
    mounts["mounts"].push_back(
        {{"destination", "/var/run/nvidia-container-devices/" + std::to_string(i)}, {"source", "/dev/null"}});
  }
  EXPECT_EQ(devices_of(mounts), 100'000u);
  const Json annotations = with_annotations(50'000);
  EXPECT_EQ(devices_of(annotations), 50'000u);
}

TEST(Request, LargeRequestsAreRefusedWithTheDefaultLimits) {
  const Json ids = with_env({"NVIDIA_VISIBLE_DEVICES=" + numbered("", 100'000)});
  EXPECT_EQ(error_of(ids),
            "NVIDIA_VISIBLE_DEVICES: value of 588889 bytes is longer than the limit of 131072 bytes");
  EXPECT_EQ(
      error_of(with_annotations(50'000)),
      "more than 4096 annotations with a request prefix (cdi.k8s.io/; the limit is the device limit per "
      "container)");
}

}  // namespace
}  // namespace gpuctk::inject

namespace gpuctk::inject {
namespace {

// ---- may_request_gpu: the decision with an unusable config file ----------------------------------

// A container asks for no GPU under any configuration only when nothing in it could be a request.
TEST(MayRequestGpu, NothingThatCouldBeARequest) {
  EXPECT_FALSE(may_request_gpu(with_env({"PATH=/bin"})));
  EXPECT_FALSE(may_request_gpu(with_env({"NVIDIA_VISIBLE_DEVICES="})));
  EXPECT_FALSE(may_request_gpu(with_env({"NVIDIA_VISIBLE_DEVICES=void"})));
  EXPECT_FALSE(may_request_gpu(with_env({"NVIDIA_VISIBLE_DEVICES=void", "CUDA_VERSION=12.2"})));
  // An image that states its CUDA requirement is not a legacy one.
  EXPECT_FALSE(may_request_gpu(with_env({"CUDA_VERSION=12.2", "NVIDIA_REQUIRE_CUDA=cuda>=12.2"})));
  // podman's own annotations, and a mount of /dev/null elsewhere.
  Json podman = with_env({"PATH=/bin"});
  podman["annotations"] = {{"io.container.manager", "libpod"},
                           {"org.opencontainers.image.stopSignal", "15"},
                           {"io.podman.annotations.autoremove", "TRUE"},
                           {"x", 3}};
  podman["mounts"] = Json::array({{{"source", "/dev/null"}, {"destination", "/dev/foo"}}});
  EXPECT_FALSE(may_request_gpu(podman));
}

TEST(MayRequestGpu, AnythingThatCouldBe) {
  // Whatever accept-envvar-when-unprivileged says (the container is unprivileged).
  EXPECT_TRUE(may_request_gpu(with_env({"NVIDIA_VISIBLE_DEVICES=0"})));
  EXPECT_TRUE(may_request_gpu(with_env({"NVIDIA_VISIBLE_DEVICES=none"})));
  EXPECT_TRUE(may_request_gpu(with_env({"CUDA_VERSION=12.2"})));
  // What read_request refuses is a request too.
  EXPECT_TRUE(may_request_gpu(with_env({"NVIDIA_VISIBLE_DEVICES=xyz"})));
  // Whatever accept-volume-mounts says.
  Json mounts = with_env({"PATH=/bin"});
  mounts["mounts"] =
      Json::array({{{"source", "/dev/null"}, {"destination", "/var/run/nvidia-container-devices/GPU-4d2a"}}});
  EXPECT_TRUE(may_request_gpu(mounts));
  // Whatever annotation-prefixes say: the default prefix, or a value that names a CDI device.
  Json annotated = with_env({"PATH=/bin"});
  annotated["annotations"] = {{"cdi.k8s.io/x", "garbage"}};
  EXPECT_TRUE(may_request_gpu(annotated));
  annotated["annotations"] = {{"example.org/devices", "x, nvidia.com/gpu=0"}};
  EXPECT_TRUE(may_request_gpu(annotated));
}

}  // namespace
}  // namespace gpuctk::inject
