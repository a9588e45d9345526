// AMD and Intel specs and vendor sets: golden specs per vendor for the non-NVIDIA fixture hosts (byte for
// byte, GPUCTK_UPDATE_GOLDEN=1 rewrites them), and the rules: names, partitions, /dev/kfd, hooks, which
// vendors get a spec.
#include "cdi/vendor_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"
#include "support/golden_file.hpp"
#include "util/file.hpp"

namespace gpuctk::cdi {
namespace {

constexpr const char* k_hook = "/usr/local/bin/gpuctk";

using test::replace_all;

BuildOptions options() {
  BuildOptions build;
  build.hook_path = k_hook;
  return build;
}

const std::vector<GpuVendor> k_all_vendors{GpuVendor::nvidia, GpuVendor::amd, GpuVendor::intel};

struct GoldenCase {
  const char* host;
  std::vector<const char*> vendors;  // the specs the host has, by vendor name
};

class GoldenVendorSpecs : public ::testing::TestWithParam<GoldenCase> {};

// `cdi generate --vendor-set nvidia,amd,intel` on the host (NVIDIA in proc mode): one spec per vendor
// with GPUs, each compared with tests/golden/<host>.<vendor>.yaml, the fixture root replaced by @ROOT@.
TEST_P(GoldenVendorSpecs, MatchGoldenFilesByteForByte) {
  const auto& param = GetParam();
  const auto f = test::host_with_real_nodes(param.host, "golden specs carry real majors and minors");
  if (!f) {
    return;
  }
  const auto built =
      build_vendor_specs(k_all_vendors, test::discover_options(*f, discover::Mode::proc), options());
  ASSERT_TRUE(built) << built.error().message;
  EXPECT_EQ(built->warnings, std::vector<std::string>{});
  EXPECT_EQ(built->specs.size() + built->absent.size(), 3U);
  std::vector<std::string> vendors;
  for (const auto& entry : built->specs) {
    const std::string vendor(gpu_vendor_name(entry.vendor));
    vendors.push_back(vendor);
    SCOPED_TRACE(vendor);
    for (const auto& problem : validate(entry.spec)) {
      ADD_FAILURE() << problem.where << ": " << problem.what;
    }
    // 0.7.0: every device has 0660 card and render nodes (video, render), whose groups it adds.
    EXPECT_EQ(entry.spec.cdi_version, "0.7.0");
    const std::string text = replace_all(write_spec(entry.spec, Format::yaml), f->host.root, "@ROOT@");
    EXPECT_TRUE(test::matches_golden(std::string(param.host) + "." + vendor + ".yaml", text));
    // What the golden file holds reads back as a spec.
    const auto parsed = parse_spec(text, Format::yaml);
    ASSERT_TRUE(parsed) << parsed.error().message;
  }
  EXPECT_EQ(vendors, std::vector<std::string>(param.vendors.begin(), param.vendors.end()));
}

INSTANTIATE_TEST_SUITE_P(Hosts, GoldenVendorSpecs,
                         ::testing::Values(GoldenCase{"mi300x-amd", {"amd"}},
                                           GoldenCase{"flex170-intel", {"intel"}},
                                           GoldenCase{"mixed-nvidia-intel", {"nvidia", "intel"}}),
                         [](const auto& test_info) {
                           std::string name = test_info.param.host;
                           std::ranges::replace(name, '-', '_');
                           return name;
                         });

std::vector<std::string> names_of(const Spec& spec) {
  std::vector<std::string> names;
  for (const auto& device : spec.devices) {
    names.push_back(device.name);
  }
  return names;
}

const Device& device_named(const Spec& spec, std::string_view name) {
  const auto it = std::ranges::find(spec.devices, name, &Device::name);
  if (it == spec.devices.end()) {
    ADD_FAILURE() << "no device " << name;
    std::abort();
  }
  return *it;
}

std::vector<std::string> node_paths(const Device& device) {
  std::vector<std::string> paths;
  for (const auto& node : device.container_edits.device_nodes) {
    paths.push_back(node.path);
  }
  return paths;
}

class AmdSpec : public test::FixtureHostTest {
 protected:
  AmdSpec() : FixtureHostTest("mi300x-amd") {}
  void SetUpHost() override {
    auto inv = discover::discover_drm_gpus(m_fixture->host.dev_root,
                                           {discover::DrmVendor::amd, discover::DrmVendor::intel});
    ASSERT_TRUE(inv) << inv.error().message;
    m_inv = std::move(*inv);
  }
  Result<Spec> build(const BuildOptions& build) {
    return build_drm_spec(m_inv, discover::DrmVendor::amd, build, m_warnings);
  }
  discover::DrmInventory m_inv;
  std::vector<std::string> m_warnings;
};

TEST_F(AmdSpec, EveryDeviceHasItsNodesAndKfdAndNothingOfOthers) {
  const auto spec = build(options());
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->kind, "amd.com/gpu");
  EXPECT_EQ(spec->container_edits, ContainerEdits{});  // everything is per device
  EXPECT_EQ(node_paths(device_named(*spec, "0")),
            (std::vector<std::string>{"/dev/dri/card1", "/dev/dri/renderD128", "/dev/kfd"}));
  // Partition 1 of GPU 2 (index 3) is its own device.
  EXPECT_EQ(node_paths(device_named(*spec, "3")),
            (std::vector<std::string>{"/dev/dri/card9", "/dev/dri/renderD136", "/dev/kfd"}));
  // The UUID of the partitioned GPU names all its partitions; a whole GPU's UUID names it.
  EXPECT_EQ(node_paths(device_named(*spec, "0x5B03E7C28D914AF6")).size(), 17U);
  EXPECT_EQ(node_paths(device_named(*spec, "0x2C9E4B6D10F58A31")), node_paths(device_named(*spec, "0")));
  EXPECT_EQ(node_paths(device_named(*spec, "all")).size(), 31U);  // 15 cards, 15 render nodes, kfd
  // /dev/kfd has a dynamic major: the runtime takes major and minor from the host node.
  const auto& kfd = device_named(*spec, "0").container_edits.device_nodes.back();
  EXPECT_EQ(kfd.path, "/dev/kfd");
  EXPECT_FALSE(kfd.major);
  EXPECT_FALSE(kfd.minor);
  EXPECT_EQ(kfd.type, "c");
  EXPECT_EQ(kfd.host_path, m_fixture->host.dev_root + "/dev/kfd");
  // No driver file is mounted and no hook but the by-path links runs.
  for (const auto& device : spec->devices) {
    EXPECT_TRUE(device.container_edits.mounts.empty()) << device.name;
    EXPECT_TRUE(device.container_edits.env.empty()) << device.name;
    ASSERT_EQ(device.container_edits.hooks.size(), 1U) << device.name;
    const auto& hook = device.container_edits.hooks.front();
    EXPECT_EQ(hook.hook_name, "createContainer");
    EXPECT_EQ(hook.path, k_hook);
    EXPECT_EQ(hook.env, std::vector<std::string>{"GPUCTK_DEBUG=false"});
  }
  EXPECT_EQ(device_named(*spec, "3").container_edits.hooks.front().args,
            (std::vector<std::string>{"gpuctk", "hook", "create-symlinks", "--link",
                                      "../card9::/dev/dri/by-path/platform-amdgpu_xcp_0-card", "--link",
                                      "../renderD136::/dev/dri/by-path/platform-amdgpu_xcp_0-render"}));
  EXPECT_EQ(m_warnings, std::vector<std::string>{});
}

// As in NVIDIA's specs: the groups of the nodes a non-root process could not open otherwise (card and
// render nodes 0660 video/render, /dev/kfd 0660 render), per device; none when turned off.
TEST_F(AmdSpec, DevicesAddTheGroupsOfTheirNodesUnlessTurnedOff) {
  const auto spec = build(options());
  ASSERT_TRUE(spec) << spec.error().message;
  for (const auto& device : spec->devices) {
    EXPECT_EQ(device.container_edits.additional_gids, (std::vector<uint32_t>{44, 105})) << device.name;
  }
  EXPECT_EQ(spec->cdi_version, "0.7.0");
  BuildOptions off = options();
  off.additional_gids = AdditionalGids::none;
  const auto plain = build(off);
  ASSERT_TRUE(plain) << plain.error().message;
  for (const auto& device : plain->devices) {
    EXPECT_TRUE(device.container_edits.additional_gids.empty()) << device.name;
  }
  EXPECT_EQ(plain->cdi_version, "0.5.0");  // the hostPath of the separate dev root
}

TEST_F(AmdSpec, NamingStrategiesAllDeviceAndHooks) {
  BuildOptions opts = options();
  opts.name_strategies = {NameStrategy::type_index};
  opts.all_device = false;
  opts.disabled_hooks = {"create-symlinks"};
  const auto spec = build(opts);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(names_of(*spec),
            (std::vector<std::string>{"gpu0", "gpu1", "gpu10", "gpu11", "gpu12", "gpu13", "gpu14", "gpu2",
                                      "gpu3", "gpu4", "gpu5", "gpu6", "gpu7", "gpu8", "gpu9"}));
  for (const auto& device : spec->devices) {
    EXPECT_TRUE(device.container_edits.hooks.empty()) << device.name;
  }
  // Names starting with a letter and no separate dev root would allow 0.3.0; the hostPath needs 0.5.0,
  // the groups of the 0660 nodes 0.7.0.
  EXPECT_EQ(spec->cdi_version, "0.7.0");

  opts.device_ids = {"0"};
  EXPECT_EQ(build(opts).error().message,
            "--device-ids selects NVIDIA devices only; it cannot select AMD GPUs");
}

TEST_F(AmdSpec, AUuidTwoGpusReportNamesNothing) {
  m_inv.gpus[1].uuid = m_inv.gpus[0].uuid;  // GPUs 0000:05:00.0 and 0000:26:00.0
  const auto spec = build(options());
  ASSERT_TRUE(spec) << spec.error().message;
  const auto names = names_of(*spec);
  EXPECT_EQ(std::ranges::count(names, "0x2C9E4B6D10F58A31"), 0);
  EXPECT_EQ(std::ranges::count(names, "0x5B03E7C28D914AF6"), 1);
  EXPECT_EQ(m_warnings, std::vector<std::string>{"AMD GPUs 0000:05:00.0 and 0000:26:00.0 report the same "
                                                 "unique_id 0x2C9E4B6D10F58A31; it names no device"});
  EXPECT_TRUE(validate(*spec).empty());
}

TEST_F(AmdSpec, NoGpuOfTheVendorIsAnError) {
  EXPECT_EQ(build_drm_spec(m_inv, discover::DrmVendor::intel, options(), m_warnings).error().message,
            "no devices to generate: no Intel GPUs in " + m_fixture->host.dev_root + "/sys/class/drm");
}

TEST(VendorSet, Parses) {
  EXPECT_EQ(parse_vendor_set("intel,nvidia").value(),
            (std::vector<GpuVendor>{GpuVendor::nvidia, GpuVendor::intel}));
  EXPECT_EQ(parse_vendor_set("amd").value(), std::vector<GpuVendor>{GpuVendor::amd});
  EXPECT_EQ(parse_vendor_set("nvidia,amd,intel").value(), k_all_vendors);
  EXPECT_EQ(parse_vendor_set("amd,AMD").error().message,
            "unknown GPU vendor \"AMD\" (want nvidia, amd or intel)");
  EXPECT_EQ(parse_vendor_set("amd,,intel").error().message,
            "unknown GPU vendor \"\" (want nvidia, amd or intel)");
  EXPECT_EQ(parse_vendor_set("intel,intel").error().message, "\"intel\" is listed twice");
  EXPECT_EQ(parse_vendor_set("").error().message,
            "empty vendor set (want a comma list of nvidia, amd and intel)");
}

TEST(VendorSet, SpecFileNamesFollowTheKind) {
  EXPECT_EQ(spec_file_name("amd.com/gpu", Format::yaml), "amd.com-gpu.yaml");
  EXPECT_EQ(spec_file_name("intel.com/gpu", Format::json), "intel.com-gpu.json");
  EXPECT_EQ(spec_file_name("nvidia.com/gpu", Format::yaml), "nvidia.com-gpu.yaml");
}

TEST(VendorSet, VendorsWithoutGpusAreAbsentWithOneLineEach) {
  const auto f = test::host_with_real_nodes("flex170-intel");
  if (!f) {
    return;
  }
  const auto built =
      build_vendor_specs(k_all_vendors, test::discover_options(*f, discover::Mode::proc), options());
  ASSERT_TRUE(built) << built.error().message;
  ASSERT_EQ(built->specs.size(), 1U);
  EXPECT_EQ(built->specs[0].vendor, GpuVendor::intel);
  const std::string root = f->host.dev_root;
  EXPECT_EQ(built->absent,
            (std::vector<std::string>{
                "no NVIDIA driver (" + root + "/proc/driver/nvidia missing): no nvidia.com/gpu spec",
                "no AMD GPU in " + root + "/sys/class/drm: no amd.com/gpu spec"}));
  // --device-ids is NVIDIA's: with a DRM vendor in the set it is refused before anything is read.
  BuildOptions with_ids = options();
  with_ids.device_ids = {"0"};
  EXPECT_EQ(
      build_vendor_specs(k_all_vendors, test::discover_options(*f, discover::Mode::proc), with_ids)
          .error()
          .message,
      "--device-ids selects NVIDIA devices only; it cannot be combined with amd or intel in --vendor-set");
  // NVIDIA only on an Intel host: nothing, one line.
  const auto nvidia_only =
      build_vendor_specs({GpuVendor::nvidia}, test::discover_options(*f, discover::Mode::proc), options());
  ASSERT_TRUE(nvidia_only) << nvidia_only.error().message;
  EXPECT_TRUE(nvidia_only->specs.empty());
  EXPECT_EQ(nvidia_only->absent.size(), 1U);
}

}  // namespace
}  // namespace gpuctk::cdi
