// In-process cost of the prestart hook's device-node loop (issue 24 cut 4): the 24 nodes of a DGX-A100
// "all" request made in a scratch container root with rootfs::make_device_node, each parent directory
// resolved from the root for every node (uncached) or once per directory (rootfs::ParentDirCache). Needs
// root (mknod); the nodes are removed between iterations, outside the timing.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "rootfs/live_mount.hpp"

namespace {

using namespace gpuctk;

// /dev/nvidia0-7, the 4 control nodes, 2 MIG capability nodes, /dev/dri/card1-8 and renderD128-131.
std::vector<rootfs::NodeSpec> dgx_nodes() {
  std::vector<rootfs::NodeSpec> nodes;
  for (uint32_t i = 0; i < 8; ++i) {
    nodes.push_back({"/dev/nvidia" + std::to_string(i), 'c', 1, 3, 0666, 0, 0});
  }
  for (const char* name : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) {
    nodes.push_back({std::string("/dev/") + name, 'c', 1, 3, 0666, 0, 0});
  }
  nodes.push_back({"/dev/nvidia-caps/nvidia-cap1", 'c', 1, 3, 0400, 0, 0});
  nodes.push_back({"/dev/nvidia-caps/nvidia-cap2", 'c', 1, 3, 0444, 0, 0});
  for (uint32_t i = 1; i <= 8; ++i) {
    nodes.push_back({"/dev/dri/card" + std::to_string(i), 'c', 1, 3, 0666, 0, 44});
  }
  for (uint32_t i = 128; i < 132; ++i) {
    nodes.push_back({"/dev/dri/renderD" + std::to_string(i), 'c', 1, 3, 0666, 0, 44});
  }
  return nodes;
}

void BM_MakeDeviceNodes(benchmark::State& state) {
  const bool cached = state.range(0) != 0;
  // A tmpfs, as a container's /dev is: the cost measured is resolution, not the file system's.
  char dir_template[] = "/dev/shm/gpuctk-node-bench.XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  const std::string dir = dir_template;
  const std::string root_path = dir + "/rootfs";
  std::filesystem::create_directories(root_path + "/dev");
  const auto root = rootfs::Root::open(root_path);
  auto mounts = rootfs::MountTable::read();
  if (!root || !mounts) {
    state.SkipWithError("open the root or read the mount table failed");
    return;
  }
  const auto nodes = dgx_nodes();
  for (auto _ : state) {
    rootfs::ParentDirCache parents;
    for (const auto& node : nodes) {
      auto made = rootfs::make_device_node(*root, node, nullptr, *mounts, cached ? &parents : nullptr);
      if (!made) {
        state.SkipWithError(made.error().message.c_str());
        break;
      }
    }
    state.PauseTiming();
    for (const auto& node : nodes) {
      ::unlink((root_path + node.path).c_str());
    }
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * nodes.size()));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_MakeDeviceNodes)->ArgName("cached")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
