// A claim's CDI spec: built from gpuctk's node spec (its common edits, and each allocated device's edits
// under the claim's device name), written where runtimes find it, read back by gpuctk's codec and by a
// runtime's view of the CDI directory, and removed.
#include "dra/claim_spec.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>

#include "cdi/codec.hpp"
#include "cdi/registry.hpp"
#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "claim_fixtures.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::dra {
namespace {

using namespace test;
using gpuctk::test::TempDir;

// The node spec's device `name`'s edits.
cdi::ContainerEdits node_edits(const cdi::Spec& node, std::string_view name) {
  for (const auto& d : node.devices) {
    if (d.name == name) {
      return d.container_edits;
    }
  }
  ADD_FAILURE() << "no node device " << name;
  return {};
}

TEST(DraClaimSpec, NamesAsNvidiasDriverWritesThem) {
  EXPECT_EQ(claim_device_name(k_uid, "gpu-0"), "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5-gpu-0");
  EXPECT_EQ(claim_cdi_id(k_uid, "gpu-0"),
            "k8s.gpu.nvidia.com/claim=0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5-gpu-0");
  EXPECT_EQ(claim_spec_path("/var/run/cdi", k_uid),
            "/var/run/cdi/k8s.gpu.nvidia.com-claim_0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5.yaml");
  EXPECT_EQ(claim_spec_path("/var/run/cdi/", k_uid), claim_spec_path("/var/run/cdi", k_uid));
}

TEST(DraClaimSpec, CommonEditsAndTheClaimsDevicesOnly) {
  const auto node = node_spec();
  const std::array devices{device("gpu-1", "1"), device("gpu-4-mig-1g5gb-0-0", "4:0")};
  auto spec = build_claim_spec(node, k_uid, devices);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->kind, "k8s.gpu.nvidia.com/claim");
  EXPECT_EQ(spec->cdi_version, cdi::minimum_version(*spec).version.str());
  EXPECT_FALSE(node.container_edits.empty());
  EXPECT_EQ(spec->container_edits, node.container_edits);
  ASSERT_EQ(spec->devices.size(), 2U);
  EXPECT_EQ(spec->devices[0].name, std::string(k_uid) + "-gpu-1");
  EXPECT_EQ(spec->devices[0].container_edits, node_edits(node, "1"));
  EXPECT_EQ(spec->devices[1].name, std::string(k_uid) + "-gpu-4-mig-1g5gb-0-0");
  EXPECT_EQ(spec->devices[1].container_edits, node_edits(node, "4:0"));
  EXPECT_NE(spec->devices[0].container_edits, spec->devices[1].container_edits);
  EXPECT_TRUE(cdi::validate(*spec).empty());
}

TEST(DraClaimSpec, ADeviceOfTwoRequestsIsOneCdiDevice) {
  const std::array devices{device("gpu-0", "0"), device("gpu-0", "0")};
  auto spec = build_claim_spec(node_spec(), k_uid, devices);
  ASSERT_TRUE(spec) << spec.error().message;
  ASSERT_EQ(spec->devices.size(), 1U);
  EXPECT_EQ(spec->devices[0].name, std::string(k_uid) + "-gpu-0");
}

TEST(DraClaimSpec, ADeviceMissingFromTheNodeSpecIsAnError) {
  const std::array devices{device("gpu-0", "0"), device("gpu-9", "9")};
  auto spec = build_claim_spec(node_spec(), k_uid, devices);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().message, "device gpu-9: not in the node spec (no device \"9\")");
}

TEST(DraClaimSpec, WrittenSpecReadsBackAndARuntimeFindsIt) {
  TempDir tmp("gpuctk-dra");
  ASSERT_FALSE(tmp.path().empty());
  const std::string dir = tmp.path() + "/cdi";  // missing: made
  const auto node = node_spec();
  const std::array devices{device("gpu-0", "0"), device("gpu-3", "3")};
  ASSERT_TRUE(write_claim_spec(dir, k_uid, node, devices));

  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755U);
  const std::string path = claim_spec_path(dir, k_uid);
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644U);
  EXPECT_TRUE(claim_spec_exists(dir, k_uid));

  auto text = read_file(path);
  ASSERT_TRUE(text) << text.error().message;
  auto parsed = cdi::parse_spec(*text, cdi::Format::yaml);
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(cdi::validate(*parsed).empty());
  EXPECT_EQ(*parsed, build_claim_spec(node, k_uid, devices).value());
  EXPECT_EQ(parsed->container_edits, node.container_edits);

  // What podman, CRI-O and containerd resolve from the directory: exactly the claim's two devices.
  const std::vector<std::string> dirs{dir};
  const auto registry = cdi::scan_spec_dirs(dirs);
  EXPECT_TRUE(registry.errors.empty()) << join(registry.errors, "\n");
  std::vector<std::string> names;
  for (const auto& [name, resolved] : registry.devices) {
    names.push_back(name);
    EXPECT_EQ(resolved.spec_file, path);
  }
  EXPECT_EQ(names, (std::vector<std::string>{claim_cdi_id(k_uid, "gpu-0"), claim_cdi_id(k_uid, "gpu-3")}));
  EXPECT_EQ(registry.devices.at("k8s.gpu.nvidia.com/claim=" + std::string(k_uid) + "-gpu-0")
                .device()
                .container_edits,
            node_edits(node, "0"));
}

TEST(DraClaimSpec, ABadUidWritesNothing) {
  TempDir tmp("gpuctk-dra");
  const std::array devices{device("gpu-0", "0")};
  auto written = write_claim_spec(tmp.path(), "../../etc/x", node_spec(), devices);
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().message,
            "claim uid \"../../etc/x\" is not a UID (want 8-4-4-4-12 hexadecimal digits)");
  EXPECT_FALSE(claim_spec_exists(tmp.path(), "../../etc/x"));
  EXPECT_TRUE(cdi::scan_spec_dirs(std::vector<std::string>{tmp.path()}).devices.empty());
}

TEST(DraClaimSpec, RemovedAndRemovingNothingIsFine) {
  TempDir tmp("gpuctk-dra");
  const std::array devices{device("gpu-0", "0")};
  ASSERT_TRUE(write_claim_spec(tmp.path(), k_uid, node_spec(), devices));
  ASSERT_TRUE(write_claim_spec(tmp.path(), k_other_uid, node_spec(), devices));
  ASSERT_TRUE(remove_claim_spec(tmp.path(), k_uid));
  EXPECT_FALSE(claim_spec_exists(tmp.path(), k_uid));
  EXPECT_TRUE(claim_spec_exists(tmp.path(), k_other_uid));  // another claim's stays
  EXPECT_TRUE(remove_claim_spec(tmp.path(), k_uid));
  EXPECT_EQ(error_text(remove_claim_spec(tmp.path(), "x")),
            "claim uid \"x\" is not a UID (want 8-4-4-4-12 hexadecimal digits)");
}

}  // namespace
}  // namespace gpuctk::dra
