#pragma once
// Inventories for the device plugin's unit tests, written out by hand so that every answer can be read
// off them: two A100s, GPU 1 in MIG mode with two 3g.20gb devices (or, for the single strategy, both GPUs
// in MIG mode), the control nodes discovery finds (no nvidia-modeset).

#include <string>
#include <vector>

#include "discover/inventory.hpp"

namespace gpuctk::plugin::test {

inline constexpr const char* k_gpu0 = "GPU-00000000-0000-4000-8000-000000000000";
inline constexpr const char* k_gpu1 = "GPU-11111111-1111-4111-8111-111111111111";
inline constexpr const char* k_mig10 = "MIG-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa";
inline constexpr const char* k_mig11 = "MIG-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb";
inline constexpr const char* k_mig00 = "MIG-cccccccc-cccc-4ccc-8ccc-cccccccccccc";
inline constexpr uint64_t k_gib = 1024ull * 1024 * 1024;

inline discover::DeviceNode node(const std::string& path, uint32_t major, uint32_t minor) {
  return {
      .path = path, .host_path = path, .type = 'c', .major = major, .minor = minor, .mode = 0666, .gid = 0};
}

inline discover::MigDevice mig(uint32_t index, uint32_t gi, uint32_t cap, const std::string& uuid,
                               const std::string& profile = "3g.20gb") {
  discover::MigDevice m;
  m.index = index;
  m.gi = gi;
  m.ci = 0;
  m.uuid = uuid;
  m.profile = profile;
  m.memory_bytes = 20 * k_gib;
  m.gi_access = node("/dev/nvidia-caps/nvidia-cap" + std::to_string(cap), 236, cap);
  m.ci_access = node("/dev/nvidia-caps/nvidia-cap" + std::to_string(cap + 1), 236, cap + 1);
  return m;
}

inline discover::Gpu gpu(uint32_t index, const std::string& uuid, const std::string& bus,
                         std::vector<discover::MigDevice> migs = {}, bool mig_enabled = false) {
  discover::Gpu g;
  g.index = index;
  g.minor = index;
  g.uuid = uuid;
  g.model = "NVIDIA A100-SXM4-40GB";
  g.bus_id = bus;
  g.memory_bytes = 40 * k_gib;
  g.mig_enabled = mig_enabled || !migs.empty();
  g.mig_capable = true;
  g.mig_devices = std::move(migs);
  g.node = node("/dev/nvidia" + std::to_string(index), 195, index);
  return g;
}

inline discover::Inventory base() {
  discover::Inventory inv;
  inv.driver_version = "550.54.15";
  inv.gpu_source = discover::GpuSource::nvml;
  inv.control_nodes = {node("/dev/nvidiactl", 195, 255), node("/dev/nvidia-uvm", 508, 0),
                       node("/dev/nvidia-uvm-tools", 508, 1)};
  return inv;
}

// GPU 0 whole, GPU 1 in MIG mode with MIG devices 1:0 (gi 1, caps 12 and 13) and 1:1 (gi 2, caps 21, 22).
inline discover::Inventory two_gpus() {
  auto inv = base();
  inv.gpus = {gpu(0, k_gpu0, "0000:07:00.0"),
              gpu(1, k_gpu1, "0000:0f:00.0", {mig(0, 1, 12, k_mig10), mig(1, 2, 21, k_mig11)})};
  return inv;
}

// Both GPUs in MIG mode with one 3g.20gb device each (0:0 and 1:0): what the single strategy accepts.
inline discover::Inventory all_mig() {
  auto inv = base();
  inv.gpus = {gpu(0, k_gpu0, "0000:07:00.0", {mig(0, 1, 12, k_mig00)}),
              gpu(1, k_gpu1, "0000:0f:00.0", {mig(0, 1, 147, k_mig10)})};
  return inv;
}

// n whole GPUs, GPU i with UUID GPU-<i, eight digits>-… and bus 0000:<i+1, two hex digits>:00.0.
inline discover::Inventory whole_gpus(uint32_t n) {
  auto inv = base();
  for (uint32_t i = 0; i < n; ++i) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08u-0000-4000-8000-000000000000", i);
    char bus[32];  // room for any uint32_t, which -Wformat-truncation counts on
    std::snprintf(bus, sizeof bus, "0000:%02x:00.0", i + 1);
    inv.gpus.push_back(gpu(i, uuid, bus));
  }
  return inv;
}

}  // namespace gpuctk::plugin::test
