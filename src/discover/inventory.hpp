#pragma once
// What discovery finds on a GPU host: the driver, its GPUs and MIG devices, device nodes and driver files.
// Host paths carry the driver root / dev root prefix (they are where the files are on this machine);
// container paths never do (they are where the files go in a container).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "discover/capability.hpp"

namespace gpuctk::discover {

enum class KernelModule { proprietary, open, unknown };

// Where the GPU list came from.
enum class GpuSource { nvml, proc };

struct DeviceNode {
  std::string path;       // in the container, e.g. "/dev/nvidia0"
  std::string host_path;  // on this machine, e.g. "<dev-root>/dev/nvidia0"
  char type = 'c';        // 'c' or 'b'
  uint32_t major = 0;
  uint32_t minor = 0;
  uint32_t mode = 0;  // permission bits, e.g. 0666
  uint32_t gid = 0;
  bool operator==(const DeviceNode&) const = default;
};

// A symbolic link to create in the container: `link` -> `target` (target is stored verbatim, often
// relative: "libcuda.so.1", "../card1").
struct Symlink {
  std::string target;
  std::string link;
  bool operator==(const Symlink&) const = default;
  auto operator<=>(const Symlink&) const = default;
};

// CUDA compute capability ("8.0": major 8, minor 0), from NVML.
struct ComputeCapability {
  uint32_t major = 0;
  uint32_t minor = 0;
  bool operator==(const ComputeCapability&) const = default;
};

// What NVML reports of a MIG device's share of its GPU (nvmlDeviceGetAttributes_v2).
struct MigAttributes {
  uint32_t gi_slices = 0;        // GPU instance slices: the 3 of "3g.20gb"
  uint32_t ci_slices = 0;        // compute instance slices: the 1 of "1c.3g.20gb", else gi_slices
  uint32_t multiprocessors = 0;  // streaming multiprocessors
  uint32_t copy_engines = 0;     // shared engines, by kind
  uint32_t decoders = 0;
  uint32_t encoders = 0;
  uint32_t jpeg_engines = 0;
  uint32_t ofa_engines = 0;
  bool operator==(const MigAttributes&) const = default;
};

struct MigDevice {
  uint32_t index = 0;   // MIG device index under its parent (NVML); names "<gpu>:<index>"
  uint32_t gi = 0;      // GPU instance id
  uint32_t ci = 0;      // compute instance id
  std::string uuid;     // "MIG-..."
  std::string profile;  // "3g.20gb", "1g.24gb+gfx"
  uint64_t memory_bytes = 0;
  std::optional<MigAttributes> attributes;  // NVML only; unknown without nvmlDeviceGetAttributes_v2
  // A graphics-capable GPU instance profile (NVML only): the MIG device gets its GPU's DRM nodes too.
  bool graphics = false;
  DeviceNode gi_access;  // /dev/nvidia-caps/nvidia-cap<N> for gpu<minor>/gi<G>/access
  DeviceNode ci_access;  // ... for gpu<minor>/gi<G>/ci<C>/access
};

struct Gpu {
  uint32_t index = 0;         // NVML index (proc mode: order of bus id)
  uint32_t minor = 0;         // /dev/nvidia<minor>
  std::string uuid;           // "GPU-..."
  std::string model;          // "NVIDIA A100-SXM4-40GB"
  std::string bus_id;         // "0000:07:00.0"
  uint64_t memory_bytes = 0;  // 0 when unknown (proc mode)
  bool mig_enabled = false;
  // Whether the GPU can do MIG at all (NVML's MIG mode query is supported); unknown in proc mode.
  std::optional<bool> mig_capable;
  std::optional<ComputeCapability> compute_capability;  // NVML only
  // NVML only, as NVIDIA's DRA driver publishes them (go-nvlib's names): "Tesla", "NvidiaRTX";
  // "Ampere", "Ada Lovelace". Unknown without NVML or for a value NVML added after gpuctk.
  std::optional<std::string> brand;
  std::optional<std::string> architecture;
  std::vector<MigDevice> mig_devices;
  DeviceNode node;                     // /dev/nvidia<minor>
  std::vector<DeviceNode> drm_nodes;   // /dev/dri/cardN, /dev/dri/renderDN (sorted)
  std::vector<Symlink> by_path_links;  // /dev/dri/by-path/pci-<bus>-{card,render}
};

enum class FileKind {
  library,      // 64-bit driver library
  library32,    // 32-bit driver library (compat32)
  binary,       // driver executable
  firmware,     // GSP firmware
  config,       // ICD / vendor / profile / X.Org configuration file
  xorg_module,  // X.Org driver module
  ipc,          // socket or directory a daemon serves (mounted writable, noexec)
};

struct DriverFile {
  FileKind kind = FileKind::library;
  std::string host_path;       // with the driver root prefix, resolved inside the driver root (no links)
  std::string container_path;  // without it (configs: the canonical container location)
  // The capability that needs the file, as file_need() (driver_files.hpp) classifies its container path;
  // none for firmware (every GPU container gets it) and for unknown libraries (mounted only for "all").
  std::optional<Capability> capability;
  bool operator==(const DriverFile&) const = default;
};

// An entry the host's ld.so.cache has for a driver library that a spec mounts, as the container's cache
// needs it (update-ldcache's --ld-cache-entry): the SONAME, the container path the loader opens (the
// mounted file, or the SONAME link next to it that create-symlinks makes) and the entry's flags and
// osversion as the host's cache has them. Taken from host discovery only, never from an image.
struct LibraryCacheEntry {
  std::string soname;      // "libcuda.so.1"
  std::string path;        // "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
  uint32_t flags = 0;      // LibType | Arch (ldcache/cache_file.hpp), e.g. 0x0303: libc6, x86-64
  uint32_t osversion = 0;  // 0 for every driver library seen so far
  bool operator==(const LibraryCacheEntry&) const = default;
  auto operator<=>(const LibraryCacheEntry&) const = default;
};

struct Inventory {
  std::string driver_version;  // "550.54.15"
  KernelModule kernel_module = KernelModule::unknown;
  std::string cuda_version;  // "12.4"; empty when unknown (no NVML)
  GpuSource gpu_source = GpuSource::proc;
  // Where the GPU list was read, for messages: "NVML (<library>)" or "<dev-root>/proc/driver/nvidia/gpus".
  std::string gpus_from;
  // The libnvidia-ml.so.1 the GPUs were read through (a host path); empty in proc mode. The device plugin
  // opens it again for events and topology.
  std::string nvml_library;
  std::string dev_dir;  // "<dev-root>/dev", for messages

  std::vector<Gpu> gpus;                     // by index
  std::vector<DeviceNode> control_nodes;     // nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset
  std::vector<DeviceNode> management_nodes;  // management mode: GPU nodes in /dev, caps, IMEX channels
  std::vector<DriverFile> files;             // sorted by container path
  std::vector<std::string> library_dirs;     // container paths of every directory with a mounted library
  // Container paths of the 64-bit directories that hold the driver's libraries (libcuda.so.<version>'s,
  // the loaders' gbm/ and vdpau/ not counted), sorted: the spec's NVIDIA_CTK_LIBCUDA_DIR.
  std::vector<std::string> driver_library_dirs;
  std::vector<Symlink> library_links;  // SONAME and development links of the driver libraries
  // The host cache's entries for mounted libraries (sorted, each once); empty without a host cache.
  std::vector<LibraryCacheEntry> library_cache_entries;
  // What a user should look at: expected pieces that are missing, files refused for leaving the driver
  // root or for being squattable (an IPC directory any user could have made).
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // informational: optional components the host lacks (IMEX)
};

}  // namespace gpuctk::discover
