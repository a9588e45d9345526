#include "cdi/version.hpp"

#include <gtest/gtest.h>

#include "cdi/codec.hpp"

namespace gpuctk::cdi {
namespace {

// A valid 0.3.0-era spec: one device with one env edit.
Spec base_spec() {
  Spec spec;
  spec.cdi_version = "0.3.0";
  spec.kind = "vendor.com/device";
  spec.devices.push_back(Device{"dev0", {}, ContainerEdits{.env = {"A=1"}}});
  return spec;
}

TEST(CdiVersionTest, ParsesAndFormats) {
  EXPECT_EQ(parse_version("0.5.0"), (Version{0, 5, 0}));
  EXPECT_EQ(parse_version("v1.1.0"), (Version{1, 1, 0}));
  EXPECT_EQ(parse_version("10.20.30"), (Version{10, 20, 30}));
  for (const char* bad :
       {"", "0.5", "0.5.0.1", "v", "vv1.0.0", "1.0.x", "01.0.0", "1.-1.0", "1..0", " 1.0.0", "1.0.0 "}) {
    EXPECT_EQ(parse_version(bad), std::nullopt) << bad;
  }
  EXPECT_EQ((Version{1, 0, 0}).str(), "1.0.0");
  EXPECT_LT((Version{0, 9, 0}), (Version{0, 10, 0}));
  EXPECT_LT((Version{0, 8, 0}), (Version{1, 0, 0}));
}

TEST(CdiVersionTest, KnowsTheReleasedVersions) {
  std::string all;
  for (const Version& v : known_versions()) {
    all += v.str() + " ";
  }
  EXPECT_EQ(all, "0.3.0 0.4.0 0.5.0 0.6.0 0.7.0 0.8.0 1.0.0 1.1.0 ");
  EXPECT_EQ(known_versions().front(), k_lowest_version);
  EXPECT_EQ(known_versions().back(), k_highest_version);
  EXPECT_TRUE(is_known_version({0, 8, 0}));
  EXPECT_FALSE(is_known_version({0, 2, 0}));
  EXPECT_FALSE(is_known_version({1, 2, 0}));
}

TEST(CdiVersionTest, BaseIsLowestVersion) {
  EXPECT_EQ(minimum_version(base_spec()), (Requirement{{0, 3, 0}, ""}));
}

TEST(CdiVersionTest, MountTypeNeeds040) {
  Spec spec = base_spec();
  spec.devices[0].container_edits.mounts.push_back(Mount{"/a", "/a", {"bind"}, ""});
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 3, 0}, ""}));
  spec.devices[0].container_edits.mounts.push_back(Mount{"/b", "/b", {}, "none"});
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 4, 0}, "devices[0].containerEdits.mounts[1].type"}));
}

TEST(CdiVersionTest, HostPathNeeds050EvenWhenEqualToPath) {
  Spec spec = base_spec();
  spec.container_edits.device_nodes.push_back(DeviceNode{.path = "/dev/x", .host_path = "/dev/x"});
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 5, 0}, "containerEdits.deviceNodes[0].hostPath"}));
}

TEST(CdiVersionTest, DigitFirstDeviceNameNeeds050) {
  Spec spec = base_spec();
  spec.devices.push_back(Device{"0", {}, ContainerEdits{.env = {"A=1"}}});
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 5, 0}, "devices[1].name (starts with a digit)"}));
}

TEST(CdiVersionTest, AnnotationsNeed060) {
  Spec spec = base_spec();
  spec.devices[0].annotations["a"] = "b";
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 6, 0}, "devices[0].annotations"}));
  spec.annotations["x"] = "y";  // spec level comes first in spec order
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 6, 0}, "annotations"}));
}

TEST(CdiVersionTest, DottedClassNeeds060) {
  Spec spec = base_spec();
  spec.kind = "vendor.com/dotted.class";
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 6, 0}, R"(kind (class contains "."))"}));
  spec.kind = "vendor.com/class";  // a "." in the vendor is fine
  EXPECT_EQ(minimum_version(spec).version, (Version{0, 3, 0}));
}

TEST(CdiVersionTest, IntelRdtPresentEvenEmptyNeeds070) {
  Spec spec = base_spec();
  spec.container_edits.intel_rdt = IntelRdt{};
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 7, 0}, "containerEdits.intelRdt"}));
  spec.container_edits.intel_rdt->enable_cmt = true;  // 0.7.0-era field
  EXPECT_EQ(minimum_version(spec).version, (Version{0, 7, 0}));
}

TEST(CdiVersionTest, AdditionalGidsNeed070) {
  Spec spec = base_spec();
  spec.devices[0].container_edits.additional_gids = {44};
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 7, 0}, "devices[0].containerEdits.additionalGids"}));
}

TEST(CdiVersionTest, NetDevicesNeed110) {
  Spec spec = base_spec();
  spec.devices[0].container_edits.net_devices.push_back(NetDevice{"eth0", "net0"});
  EXPECT_EQ(minimum_version(spec), (Requirement{{1, 1, 0}, "devices[0].containerEdits.netDevices"}));
}

TEST(CdiVersionTest, RdtSchemataPresentEvenEmptyNeeds110) {
  Spec spec = base_spec();
  spec.devices[0].container_edits.intel_rdt = IntelRdt{.schemata = std::vector<std::string>{}};
  EXPECT_EQ(minimum_version(spec), (Requirement{{1, 1, 0}, "devices[0].containerEdits.intelRdt.schemata"}));
}

TEST(CdiVersionTest, RdtMonitoringNeeds110) {
  Spec spec = base_spec();
  spec.container_edits.intel_rdt = IntelRdt{.enable_monitoring = true};
  EXPECT_EQ(minimum_version(spec), (Requirement{{1, 1, 0}, "containerEdits.intelRdt.enableMonitoring"}));
}

TEST(CdiVersionTest, HighestTriggerWinsAndFirstInSpecOrderIsNamed) {
  Spec spec = base_spec();
  spec.devices[0].container_edits.mounts.push_back(Mount{"/b", "/b", {}, "none"});  // 0.4.0
  spec.devices[0].container_edits.additional_gids = {5};                            // 0.7.0
  spec.devices.push_back(Device{"1", {}, ContainerEdits{.additional_gids = {6}}});  // 0.5.0, 0.7.0
  EXPECT_EQ(minimum_version(spec), (Requirement{{0, 7, 0}, "devices[0].containerEdits.additionalGids"}));
}

TEST(CdiVersionTest, EmptyButPresentKeysDoNotRaiseTheVersion) {
  const auto spec = parse_spec(R"(---
cdiVersion: "0.3.0"
kind: "vendor.com/device"
annotations: {}
devices:
  - name: "dev0"
    annotations: {}
    containerEdits:
      env: ["A=1"]
      additionalGids: []
      netDevices: []
      mounts:
        - hostPath: "/a"
          containerPath: "/a"
          type: ""
      deviceNodes:
        - path: "/dev/x"
          hostPath: ""
)",
                               Format::yaml);
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(minimum_version(*spec), (Requirement{{0, 3, 0}, ""}));
}

}  // namespace
}  // namespace gpuctk::cdi
