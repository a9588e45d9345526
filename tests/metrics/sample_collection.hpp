#pragma once
// Collections for the exposition's tests, its promtool check and its benchmark: GPUs with every reading
// NVML gives, each in MIG mode with MIG devices that have only their memory, pods holding some devices.

#include <string>

#include "metrics/exposition.hpp"

namespace gpuctk::metrics::test {

// Every reading a recent datacenter GPU gives.
inline discover::NvmlSample full_sample(uint32_t seed) {
  discover::NvmlSample s;
  s.sm_clock_mhz = 1410 - seed;
  s.memory_clock_mhz = 1215;
  s.gpu_temperature_c = 30 + seed;
  s.memory_temperature_c = 40 + seed;
  s.power_mw = 61234 + seed * 1000;
  s.energy_mj = 98765432101ULL + seed;
  s.pcie_tx_kb_per_s = 7 + seed;
  s.pcie_rx_kb_per_s = 8 + seed;
  s.pcie_replays = seed;
  s.gpu_utilization = 90 + seed;
  s.memory_utilization = 12;
  s.encoder_utilization = 0;
  s.decoder_utilization = 0;
  s.fb_total_bytes = 40ULL << 30;
  s.fb_used_bytes = (1ULL << 30) + seed;
  s.fb_free_bytes = (38ULL << 30) + 12345;
  s.fb_reserved_bytes = 1ULL << 30;
  s.remapped_rows_correctable = 0;
  s.remapped_rows_uncorrectable = 0;
  s.row_remap_pending = false;
  s.row_remap_failure = false;
  s.nvlink_tx_kib = 1000000ULL * seed;
  s.nvlink_rx_kib = 2000000ULL * seed;
  s.ecc_sbe_volatile = 0;
  s.ecc_dbe_volatile = 0;
  s.ecc_sbe_aggregate = seed;
  s.ecc_dbe_aggregate = 0;
  return s;
}

inline std::string gpu_uuid(uint32_t gpu) {
  return "GPU-" + std::to_string(10000000 + gpu) + "-4e5a-9c2b-1f6d3a7e8b90";
}

inline std::string mig_uuid(uint32_t gpu, uint32_t mig) {
  return "MIG-" + std::to_string(20000000 + gpu * 10 + mig) + "-7a1c-5d3e-b2f4-6c8e0a9d1b3f";
}

// `gpus` A100s, each in MIG mode with `migs` 1g.5gb devices; every MIG device held by a pod, every third
// by three (time-sliced replicas in three pods).
inline Collection large_collection(uint32_t gpus = 8, uint32_t migs = 7) {
  Collection c;
  c.hostname = "gpu-node-17.cluster.example";
  c.driver_version = "550.54.15";
  for (uint32_t g = 0; g < gpus; ++g) {
    DeviceReading gpu;
    gpu.gpu = g;
    gpu.uuid = gpu_uuid(g);
    gpu.pci_bus_id = "00000000:" + std::to_string(10 + g) + ":00.0";
    gpu.device = "nvidia" + std::to_string(g);
    gpu.model_name = "NVIDIA A100-SXM4-40GB";
    gpu.sample = full_sample(g);
    c.devices.push_back(gpu);
    for (uint32_t m = 0; m < migs; ++m) {
      DeviceReading mig = gpu;
      mig.gpu_instance_id = 7 + m;
      mig.gpu_instance_profile = "1g.5gb";
      mig.mig_uuid = mig_uuid(g, m);
      mig.sample = {};
      mig.sample.fb_total_bytes = 4864ULL << 20;
      mig.sample.fb_used_bytes = (13ULL << 20) + m;
      mig.sample.fb_free_bytes = (4851ULL << 20) - m;
      const uint32_t holders = (g * migs + m) % 3 == 0 ? 3 : 1;
      for (uint32_t h = 0; h < holders; ++h) {
        mig.holders.push_back(
            Holder{"train-" + std::to_string(g) + "-" + std::to_string(m) + "-" + std::to_string(h),
                   "ml-team", "main"});
      }
      c.devices.push_back(mig);
    }
  }
  return c;
}

}  // namespace gpuctk::metrics::test
