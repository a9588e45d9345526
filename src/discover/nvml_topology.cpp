// How NVML says GPUs are linked, for the device plugin's preferred allocation: the PCIe path of every pair
// (nvmlDeviceGetTopologyCommonAncestor) and the NVLinks between them (each active link's remote PCI bus id),
// read the way NVIDIA's allocator (go-gpuallocator) reads them.
#include "discover/nvml.hpp"
#include "discover/nvml_abi.h"
#include "discover/nvml_library.hpp"
#include "discover/pci_bus_id.hpp"

namespace gpuctk::discover {

namespace {

// NVML's common-ancestor levels -> the allocator's link kinds, one row per level.
constexpr struct {
  nvmlGpuTopologyLevel_t level;
  PciePath path;
} k_levels[] = {
    {NVML_TOPOLOGY_INTERNAL, PciePath::same_board},     // two GPUs of one board
    {NVML_TOPOLOGY_SINGLE, PciePath::single_switch},    // one PCIe switch
    {NVML_TOPOLOGY_MULTIPLE, PciePath::multi_switch},   // several switches, no host bridge
    {NVML_TOPOLOGY_HOSTBRIDGE, PciePath::host_bridge},  // one host bridge
    {NVML_TOPOLOGY_NODE, PciePath::same_cpu},           // one NUMA node
    {NVML_TOPOLOGY_SYSTEM, PciePath::cross_cpu},        // across NUMA nodes
};

// NOT_SUPPORTED and INVALID_ARGUMENT of a link query mean "no such link here", as the allocator reads them.
bool no_such_link(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_INVALID_ARGUMENT;
}

}  // namespace

Result<NvmlTopology> Nvml::topology() const {
  const auto& api = m_library->api;
  const auto check = [&](nvmlReturn_t rc, const char* call) { return nvml_detail::check(api, rc, call); };
  unsigned count = 0;
  GPUCTK_TRY(check(api.count(&count), "nvmlDeviceGetCount_v2"));
  std::vector<nvmlDevice_t> devices(count);
  std::vector<std::string> bus_ids(count);
  for (unsigned i = 0; i < count; ++i) {
    GPUCTK_TRY(check(api.handle(i, &devices[i]), "nvmlDeviceGetHandleByIndex_v2"));
    nvmlPciInfo_t pci{};
    GPUCTK_TRY(check(api.pci(devices[i], &pci), "nvmlDeviceGetPciInfo_v3"));
    GPUCTK_TRY_ASSIGN(bus_ids[i], parse_pci_bus_id(pci.busId));
  }
  NvmlTopology out;
  out.links.assign(count, std::vector<GpuLink>(count));
  if (api.common_ancestor == nullptr) {
    out.warnings.push_back("nvml: " + m_library->path +
                           " lacks nvmlDeviceGetTopologyCommonAncestor: the GPUs' PCIe paths are unknown");
  }
  bool unsupported = false;
  for (unsigned i = 0; i < count && api.common_ancestor != nullptr; ++i) {
    for (unsigned j = 0; j < count; ++j) {
      nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
      const nvmlReturn_t rc =
          i == j ? NVML_ERROR_NOT_SUPPORTED : api.common_ancestor(devices[i], devices[j], &level);
      if (i == j || rc == NVML_ERROR_NOT_SUPPORTED) {
        unsupported = unsupported || i != j;
        continue;
      }
      GPUCTK_TRY(check(rc, "nvmlDeviceGetTopologyCommonAncestor"));
      for (const auto& row : k_levels) {
        if (row.level == level) {
          out.links[i][j].pcie = row.path;
        }
      }
    }
  }
  if (unsupported) {
    out.warnings.emplace_back(
        "nvml: nvmlDeviceGetTopologyCommonAncestor: Not Supported: the GPUs' PCIe paths are unknown");
  }
  if (api.nvlink_state == nullptr || api.nvlink_remote_pci == nullptr) {
    out.warnings.push_back(
        "nvml: " + m_library->path +
        " lacks nvmlDeviceGetNvLinkState or nvmlDeviceGetNvLinkRemotePciInfo_v2: NVLinks are unknown");
    return out;
  }
  for (unsigned i = 0; i < count; ++i) {
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      nvmlReturn_t rc = api.nvlink_state(devices[i], link, &active);
      if (no_such_link(rc)) {
        continue;
      }
      GPUCTK_TRY(check(rc, "nvmlDeviceGetNvLinkState"));
      if (active != NVML_FEATURE_ENABLED) {
        continue;
      }
      nvmlPciInfo_t remote{};
      rc = api.nvlink_remote_pci(devices[i], link, &remote);
      if (no_such_link(rc)) {
        continue;
      }
      GPUCTK_TRY(check(rc, "nvmlDeviceGetNvLinkRemotePciInfo_v2"));
      const auto remote_bus = parse_pci_bus_id(remote.busId);
      for (unsigned j = 0; remote_bus && j < count; ++j) {
        if (j != i && bus_ids[j] == *remote_bus) {
          ++out.links[i][j].nvlinks;
        }
      }
    }
  }
  return out;
}

}  // namespace gpuctk::discover
