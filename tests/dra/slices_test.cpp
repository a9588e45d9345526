// dra::build_slices and same_content: the node's ResourceSlice objects, their names, owner, limits.
#include "dra/slices.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuctk::dra {
namespace {

using nlohmann::json;

const Pool k_pool{.node_name = "node-a", .node_uid = "0b7f6c3e-uid", .generation = 3};

std::vector<Device> synthetic(size_t count) {
  std::vector<Device> out;
  for (size_t i = 0; i < count; ++i) {
    Device device;
    device.name = "gpu-" + std::to_string(i);
    device.uuid = "GPU-" + std::to_string(i);
    device.cdi_name = std::to_string(i);
    device.gpu_index = static_cast<uint32_t>(i);
    device.attributes = {{"type", {Attribute::Type::string, "gpu"}}};
    out.push_back(std::move(device));
  }
  return out;
}

std::vector<size_t> device_counts(const std::vector<json>& slices) {
  std::vector<size_t> out;
  for (const auto& slice : slices) {
    out.push_back(slice["spec"].contains("devices") ? slice["spec"]["devices"].size() : 0);
  }
  return out;
}

TEST(DraSlices, OneDeviceAsTheApiSpellsIt) {
  Device device;
  device.name = "gpu-0";
  device.uuid = "GPU-0";
  device.cdi_name = "0";
  device.attributes = {{"type", {Attribute::Type::string, "gpu"}},
                       {"index", {Attribute::Type::integer, "0"}},
                       {"driverVersion", {Attribute::Type::version, "550.54.15"}},
                       {"flag", {Attribute::Type::boolean, "true"}}};
  device.capacity = {{"memory", "40Gi"}};
  const auto slices = build_slices({device}, {}, k_pool);
  ASSERT_EQ(slices.size(), 1u);
  const json want = json::parse(R"({
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {
      "name": "node-a-gpu.nvidia.com-0",
      "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "0b7f6c3e-uid",
                           "controller": true}]
    },
    "spec": {
      "driver": "gpu.nvidia.com",
      "nodeName": "node-a",
      "pool": {"name": "node-a", "generation": 3, "resourceSliceCount": 1},
      "devices": [{
        "name": "gpu-0",
        "attributes": {"driverVersion": {"version": "550.54.15"}, "flag": {"bool": true},
                       "index": {"int": 0}, "type": {"string": "gpu"}},
        "capacity": {"memory": {"value": "40Gi"}}
      }]
    }
  })");
  EXPECT_EQ(slices[0], want) << slices[0].dump(2);
}

TEST(DraSlices, TwoHundredDevicesSplitInOrderAt128) {
  const auto slices = build_slices(synthetic(200), {}, k_pool);
  ASSERT_EQ(device_counts(slices), (std::vector<size_t>{128, 72}));
  EXPECT_EQ(slices[0]["metadata"]["name"], "node-a-gpu.nvidia.com-0");
  EXPECT_EQ(slices[1]["metadata"]["name"], "node-a-gpu.nvidia.com-1");
  EXPECT_EQ(slices[1]["spec"]["devices"][0]["name"], "gpu-128");
  EXPECT_EQ(slices[1]["spec"]["devices"][71]["name"], "gpu-199");
  for (const auto& slice : slices) {
    EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_EQ(slice["spec"]["pool"]["generation"], 3);
  }
}

// A slice with a tainted device holds at most 64 devices; a slice without keeps 128.
TEST(DraSlices, ASliceWithTaintsHoldsAtMost64Devices) {
  const Taint xid{.key = "gpu.nvidia.com/xid",
                  .value = "79",
                  .effect = "NoSchedule",
                  .time_added = "2025-06-01T12:00:00Z"};
  const Taints taints{{"gpu-10", {xid}}};
  const auto slices = build_slices(synthetic(200), taints, k_pool);
  EXPECT_EQ(device_counts(slices), (std::vector<size_t>{64, 128, 8}));
  EXPECT_EQ(slices[0]["spec"]["devices"][10]["taints"],
            json::parse(R"([{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoSchedule",
                             "timeAdded": "2025-06-01T12:00:00Z"}])"));
  EXPECT_FALSE(slices[0]["spec"]["devices"][9].contains("taints"));

  // A tainted device after 100 untainted ones starts a new slice; gpu-lost has no value.
  const Taints late{{"gpu-100",
                     {Taint{.key = "gpu.nvidia.com/gpu-lost",
                            .value = "",
                            .effect = "NoSchedule",
                            .time_added = "2025-06-01T12:00:00Z"}}}};
  const auto split = build_slices(synthetic(200), late, k_pool);
  EXPECT_EQ(device_counts(split), (std::vector<size_t>{100, 64, 36}));
  EXPECT_FALSE(split[1]["spec"]["devices"][0]["taints"][0].contains("value"));
}

TEST(DraSlices, NoDevicesIsOneSliceSoThatThePoolExists) {
  const auto slices = build_slices({}, {}, k_pool);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_FALSE(slices[0]["spec"].contains("devices"));
  EXPECT_EQ(slices[0]["spec"]["pool"]["resourceSliceCount"], 1);
}

TEST(DraSlices, NamesAreTheNodesUnlessTooLongForADnsSubdomain) {
  EXPECT_EQ(slice_name("node-a.example.com", 2), "node-a.example.com-gpu.nvidia.com-2");
  const std::string long_node = std::string(60, 'a') + "." + std::string(60, 'b') + "." +
                                std::string(60, 'c') + "." +
                                std::string(60, 'd');  // 243 characters: a valid node name
  const auto name = slice_name(long_node, 0);
  EXPECT_EQ(name.substr(0, 41), std::string(40, 'a') + "-");
  EXPECT_EQ(name.size(), 40 + 1 + 16 + std::string("-gpu.nvidia.com-0").size());
  EXPECT_TRUE(name.ends_with("-gpu.nvidia.com-0"));
  EXPECT_EQ(slice_name(long_node, 0), name) << "deterministic";
  EXPECT_NE(slice_name(long_node + "x", 0), name) << "another node, another hash";
  // A last label that "-gpu" would take over 63 characters.
  const std::string wide = std::string(62, 'n');
  EXPECT_EQ(slice_name(wide, 1).substr(0, 41), std::string(40, 'n') + "-");
  EXPECT_EQ(slice_name("NODE_A", 0).substr(0, 7), "node-a-") << "folded into a label";
}

TEST(DraSlices, SameContentIgnoresWhatTheServerSets) {
  const auto wanted = build_slices(synthetic(3), {}, k_pool)[0];
  auto published = wanted;
  published["metadata"]["uid"] = "1234";
  published["metadata"]["resourceVersion"] = "99";
  published["metadata"]["creationTimestamp"] = "2025-06-01T12:00:00Z";
  published["metadata"]["managedFields"] = json::array({json::object()});
  EXPECT_TRUE(same_content(published, wanted));

  auto other = published;
  other["spec"]["devices"][0]["attributes"]["type"]["string"] = "mig";
  EXPECT_FALSE(same_content(other, wanted));
  auto regenerated = build_slices(synthetic(3), {}, Pool{k_pool.node_name, k_pool.node_uid, 4})[0];
  EXPECT_FALSE(same_content(published, regenerated)) << "a new generation is a change";
  auto owner = published;
  owner["metadata"]["ownerReferences"][0]["uid"] = "another";
  EXPECT_FALSE(same_content(owner, wanted));

  auto empty = build_slices({}, {}, k_pool)[0];
  auto with_empty_list = empty;
  with_empty_list["spec"]["devices"] = json::array();
  EXPECT_TRUE(same_content(with_empty_list, empty)) << "the server drops an empty device list";
}

}  // namespace
}  // namespace gpuctk::dra
