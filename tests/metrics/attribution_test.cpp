// Which pod holds which device, from pod-resources' answer: resources, device ID forms, the bounds and
// their warnings, and the holders carried into the exposition.
#include "metrics/attribution.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "metrics/sample_collection.hpp"

namespace gpuctk::metrics {
namespace {

const std::string k_gpu0 = "GPU-8d6a0c51-1f0e-4b5c-9a43-6f2de1c0b7aa";
const std::string k_gpu1 = "GPU-3e0f9b27-55d1-4c8a-8e1f-0b9a7c6d5e4f";
const std::string k_mig0 = "MIG-4c1f2d3e-6b7a-5c8d-9e0f-1a2b3c4d5e6f";

ContainerDevices entry(std::string ns, std::string pod, std::string container, std::string resource,
                       std::vector<std::string> ids) {
  return ContainerDevices{std::move(pod), std::move(ns), std::move(container), std::move(resource),
                          std::move(ids)};
}

// "<uuid>: ns/pod/container ..." per device.
std::string describe(const Attribution& a) {
  std::string out;
  for (const auto& [uuid, holders] : a.holders) {
    out += uuid + ":";
    for (const auto& h : holders) {
      out += " " + h.namespace_name + "/" + h.pod + "/" + h.container;
    }
    out += "\n";
  }
  return out;
}

TEST(MetricsAttribution, WholeGpu) {
  const auto a = attribute({entry("ml", "train-0", "main", "nvidia.com/gpu", {k_gpu0})});
  EXPECT_EQ(describe(a), k_gpu0 + ": ml/train-0/main\n");
  EXPECT_TRUE(a.warnings.empty());
}

TEST(MetricsAttribution, ReplicasHeldByTwoPodsAreTwoHolders) {
  const auto a = attribute({
      entry("ml", "b", "main", "nvidia.com/gpu.shared", {k_gpu0 + "::3"}),
      entry("ml", "a", "main", "nvidia.com/gpu.shared", {k_gpu0 + "::0", k_gpu0 + "::1"}),
      entry("ml", "c", "side", "nvidia.com/gpu", {k_gpu1 + "::12"}),
  });
  // Sorted by pod, then namespace and container; two replicas in one container hold the GPU once.
  EXPECT_EQ(describe(a), k_gpu1 + ": ml/c/side\n" + k_gpu0 + ": ml/a/main ml/b/main\n");
  EXPECT_TRUE(a.warnings.empty());
}

TEST(MetricsAttribution, MigDevicesOfAnyNvidiaResource) {
  const auto a = attribute({
      entry("ml", "infer", "server", "nvidia.com/mig-1g.5gb", {k_mig0}),
      entry("ml", "infer", "sidecar", "nvidia.com/mig-1g.5gb.shared", {k_mig0 + "::2"}),
      entry("hpc", "sim", "main", "nvidia.com/a100", {k_gpu1}),
  });
  EXPECT_EQ(describe(a), k_gpu1 + ": hpc/sim/main\n" + k_mig0 + ": ml/infer/server ml/infer/sidecar\n");
}

TEST(MetricsAttribution, OtherResourcesAreIgnoredWithoutAWarning) {
  const auto a = attribute({
      entry("ml", "x", "main", "amd.com/gpu", {k_gpu0}),
      entry("ml", "x", "main", "example.com/nvidia.com/gpu", {k_gpu0}),
      entry("ml", "x", "main", "nvidia.com", {k_gpu0}),
      entry("ml", "x", "main", "cpu", {"0", "1"}),
      entry("ml", "x", "main", std::string(300, 'r'), {k_gpu0}),
  });
  EXPECT_TRUE(a.holders.empty()) << describe(a);
  EXPECT_TRUE(a.warnings.empty());
}

TEST(MetricsAttribution, DeviceIdsThatNameNoUuidAreCountedInOneWarning) {
  const auto a = attribute({
      entry("ml", "p", "c", "nvidia.com/gpu",
            {"0", "GPU-", k_gpu0 + "::", k_gpu0 + "::x", "nvidia0/gi1", k_gpu0}),
  });
  EXPECT_EQ(describe(a), k_gpu0 + ": ml/p/c\n");
  EXPECT_EQ(a.warnings,
            std::vector<std::string>{
                "pod-resources: 5 device IDs without a GPU or MIG device UUID left out (the first: \"0\" "
                "of nvidia.com/gpu in ml/p/c)"});
}

TEST(MetricsAttribution, OddNamesAreKeptAndEscapedInTheExposition) {
  const std::string pod = "we\"ird\npod\\";
  const auto a = attribute({entry("n\"s", pod, "c\n1", "nvidia.com/gpu", {k_gpu0})});
  ASSERT_EQ(a.holders.at(k_gpu0), std::vector<Holder>{(Holder{pod, "n\"s", "c\n1"})});
  Collection c = test::large_collection(1, 0);
  c.devices[0].uuid = k_gpu0;
  apply(a, c);
  std::string out;
  render({*std::ranges::find(default_counters().counters, "DCGM_FI_DEV_GPU_TEMP",
                             [](const Counter& x) { return x.field->name; })},
         c, out);
  EXPECT_NE(out.find(R"(,container="c\n1",namespace="n\"s",pod="we\"ird\npod\\"} 30)"), std::string::npos)
      << out;
}

TEST(MetricsAttribution, ApplySetsHoldersByMigUuidOrGpuUuid) {
  Collection c = test::large_collection(2, 2);
  Attribution a;
  a.holders[test::gpu_uuid(1)] = {Holder{"whole", "ml", "main"}};
  a.holders[test::mig_uuid(0, 1)] = {Holder{"slice", "ml", "main"}};
  a.holders["GPU-not-on-this-node"] = {Holder{"elsewhere", "ml", "main"}};
  apply(a, c);
  std::vector<std::string> pods;
  for (const auto& d : c.devices) {
    pods.push_back(d.holders.empty() ? "-" : d.holders[0].pod);
  }
  // GPU 0, its MIG devices 0 and 1, GPU 1, its MIG devices: a GPU's holders are not its MIG devices'.
  EXPECT_EQ(pods, (std::vector<std::string>{"-", "-", "slice", "whole", "-", "-"}));
}

TEST(MetricsAttribution, NamesLongerThan253BytesAreRefused) {
  const std::string long_name(254, 'x');
  const auto a = attribute({
      entry("ml", long_name, "c", "nvidia.com/gpu", {k_gpu0}),
      entry(long_name, "p", "c", "nvidia.com/gpu", {k_gpu0}),
      entry("ml", "p", long_name, "nvidia.com/gpu", {k_gpu0}),
      entry("ml", "p", "c", "nvidia.com/" + long_name, {k_gpu0}),
      entry("ml", "p", "c", "nvidia.com/gpu", {k_gpu0 + "::" + std::string(300, '1'), k_gpu1}),
      entry("ml", std::string(253, 'y'), "c", "nvidia.com/gpu", {k_gpu0}),
  });
  EXPECT_EQ(describe(a), k_gpu1 + ": ml/p/c\n" + k_gpu0 + ": ml/" + std::string(253, 'y') + "/c\n");
  EXPECT_EQ(a.warnings,
            std::vector<std::string>{
                "pod-resources: 5 names of more than 253 bytes left out (the first: a pod name of 254 "
                "bytes in namespace ml)"});
}

TEST(MetricsAttribution, WarningsEscapeWhatTheKubeletSent) {
  const auto a = attribute({entry("n\ns", "p\x1B[31m", "c", "nvidia.com/gpu", {"bad\nid"})});
  EXPECT_EQ(a.warnings,
            std::vector<std::string>{
                "pod-resources: 1 device ID without a GPU or MIG device UUID left out (the first: "
                "\"bad\\nid\" of nvidia.com/gpu in n\\ns/p\\x1b[31m/c)"});
}

TEST(MetricsAttribution, APodWithHugeListsIsCut) {
  std::vector<ContainerDevices> listed;
  // One container with 1030 device IDs in two entries: the first 1024 count.
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    ids.push_back(k_gpu0 + "::" + std::to_string(i));
  }
  listed.push_back(entry("ml", "huge", "main", "nvidia.com/gpu.shared", ids));
  listed.push_back(entry("ml", "huge", "main", "nvidia.com/gpu", std::vector<std::string>(30, k_gpu1)));
  // 70 containers: the first 64 count (the one above among them).
  for (int i = 1; i < 70; ++i) {
    listed.push_back(entry("ml", "huge", "c" + std::to_string(i), "nvidia.com/gpu", {k_mig0}));
  }
  const auto a = attribute(listed);
  EXPECT_EQ(a.holders.at(k_gpu1).size(), 1u);
  EXPECT_EQ(a.holders.at(k_mig0).size(), 63u);
  EXPECT_EQ(a.warnings,
            (std::vector<std::string>{
                "pod-resources: 6 containers past a pod's first 64 left out (the first: ml/huge/c64)",
                "pod-resources: 6 device IDs past a container's first 1024 left out (the first in "
                "ml/huge/main)",
            }));
}

TEST(MetricsAttribution, IdsTheClientDidNotCopyAreCountedWithTheCut) {
  auto listed =
      std::vector<ContainerDevices>{entry("ml", "huge", "main", "nvidia.com/gpu.shared", {k_gpu0 + "::0"})};
  listed[0].device_ids_not_copied = 99999;
  const auto a = attribute(listed);
  EXPECT_EQ(a.holders.at(k_gpu0).size(), 1u);
  EXPECT_EQ(a.warnings,
            (std::vector<std::string>{
                "pod-resources: 99999 device IDs past a container's first 1024 left out (the first "
                "in ml/huge/main)",
            }));
}

TEST(MetricsAttribution, PodsAndHoldersPastTheirBoundsAreCut) {
  std::vector<ContainerDevices> listed;
  for (std::size_t i = 0; i < k_max_pods + 3; ++i) {
    listed.push_back(entry("ml", "pod-" + std::to_string(10000 + i), "main", "nvidia.com/gpu.shared",
                           {k_gpu0 + "::" + std::to_string(i)}));
  }
  listed.push_back(entry("ml", "pod-10000", "second", "nvidia.com/gpu", {k_gpu1}));  // a pod already taken
  const auto a = attribute(listed);
  ASSERT_EQ(a.holders.at(k_gpu0).size(), k_max_holders);
  EXPECT_EQ(a.holders.at(k_gpu0).front().pod, "pod-10000");
  EXPECT_EQ(a.holders.at(k_gpu0).back().pod, "pod-10063");
  EXPECT_EQ(describe(Attribution{{{k_gpu1, a.holders.at(k_gpu1)}}, {}}), k_gpu1 + ": ml/pod-10000/second\n");
  EXPECT_EQ(a.warnings,
            (std::vector<std::string>{
                "pod-resources: 3 pods past the first 4096 left out (the first: ml/pod-14096)",
                "pod-resources: 4032 holders past a device's first 64 left out (the first on " + k_gpu0 + ")",
            }));
}

TEST(MetricsAttribution, NothingListedHoldsNothing) {
  const auto a = attribute({});
  EXPECT_TRUE(a.holders.empty());
  EXPECT_TRUE(a.warnings.empty());
  Collection c = test::large_collection(1, 1);
  apply(a, c);
  for (const auto& d : c.devices) {
    EXPECT_TRUE(d.holders.empty());
  }
}

}  // namespace
}  // namespace gpuctk::metrics
