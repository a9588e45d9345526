#include "install/device_nodes.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "discover/gpu_information.hpp"
#include "discover/host_fs.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"

namespace gpuctk::install {

namespace {

// The NVIDIA driver's control nodes: name, the /proc/devices entry whose major they take (empty: the
// driver's own, nvidia_gpu_major), minor. The minors are fixed by the driver.
struct ControlRow {
  std::string_view name;
  std::string_view device;
  uint32_t minor;
};
constexpr ControlRow k_control_nodes[] = {
    {"nvidiactl", "", 255},                           // every CUDA, NVML and driver call
    {"nvidia-modeset", "", 254},                      // display and Vulkan
    {"nvidia-uvm", discover::k_nvidia_uvm, 0},        // CUDA's unified memory (nvidia-uvm.ko)
    {"nvidia-uvm-tools", discover::k_nvidia_uvm, 1},  // UVM profiling (nvidia-uvm.ko)
};

// /proc is a few KiB; a GPU's information file a few hundred bytes.
constexpr size_t k_max_proc_file = size_t{1} << 16;
// The driver supports at most this many GPUs (minors 0..254, below nvidia-modeset).
constexpr size_t k_max_gpus = 254;

// The minors of the GPUs the driver lists, excluded ones left out (the driver makes no node for them).
Result<std::vector<uint32_t>> gpu_minors(const std::string& dev_root) {
  const std::string dir = discover::under_root(dev_root, "/proc/driver/nvidia/gpus");
  GPUCTK_TRY_ASSIGN(const auto entries, discover::list_dir(dir));
  if (entries.size() > k_max_gpus) {
    return fail(dir + ": more than " + std::to_string(k_max_gpus) + " GPUs");
  }
  std::vector<uint32_t> minors;
  for (const auto& entry : entries) {
    const std::string path = dir + "/" + entry.name + "/information";
    GPUCTK_TRY_ASSIGN(const auto text, read_file(path, k_max_proc_file));
    auto info = discover::parse_gpu_information(text);
    if (!info) {
      return fail_with(path, info.error());
    }
    if (!info->excluded) {
      minors.push_back(info->minor);
    }
  }
  std::ranges::sort(minors);
  return minors;
}

// Makes `node` in the directory `dir` (an fd; `path` names it in messages), or finds it already there.
Result<NodeResult> make_node(int dir, const std::string& path, const NodeToMake& node, bool dry_run) {
  NodeResult result{.path = path, .node = node, .change = NodeChange::made};
  const dev_t want = makedev(node.major, node.minor);
  struct stat st {};
  if (::fstatat(dir, node.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (!S_ISCHR(st.st_mode)) {
      return fail(path + ": exists and is not a character device");
    }
    if (st.st_rdev == want) {
      result.change = NodeChange::unchanged;
      return result;
    }
    result.change = NodeChange::replaced;
    result.old_major = major(st.st_rdev);
    result.old_minor = minor(st.st_rdev);
  } else if (errno != ENOENT) {
    return fail_errno("stat " + path, errno);
  }
  if (dry_run) {
    return result;
  }
  // Under a temporary name first, given its mode (mknod's is cut by the umask), then renamed: the node
  // never is missing or half made.
  const std::string temp = "." + node.name + ".gpuctk-" + std::to_string(::getpid());
  if (::mknodat(dir, temp.c_str(), S_IFCHR | 0666, want) != 0) {
    return fail_errno("mknod " + path, errno);
  }
  if (::fchmodat(dir, temp.c_str(), 0666, 0) != 0 ||
      ::renameat(dir, temp.c_str(), dir, node.name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir, temp.c_str(), 0);
    return fail_errno("mknod " + path, err);
  }
  return result;
}

}  // namespace

Result<NodePlan> plan_device_nodes(const discover::CharDevices& devices,
                                   const std::vector<uint32_t>& gpu_minors, NodeSet set) {
  const auto gpu_major = devices.nvidia_gpu_major();
  if (!gpu_major) {
    return fail("/proc/devices: no " + std::string(discover::k_nvidia) + " or " +
                std::string(discover::k_nvidia_frontend) + " entry: the NVIDIA driver is not loaded");
  }
  NodePlan plan;
  if (set != NodeSet::gpus) {
    for (const auto& row : k_control_nodes) {
      // (devices.major): not the major() macro of <sys/sysmacros.h>.
      const auto node_major = row.device.empty() ? gpu_major : (devices.major)(row.device);
      if (!node_major) {
        if (std::ranges::none_of(plan.notes,
                                 [&](const std::string& note) { return note.starts_with(row.device); })) {
          plan.notes.push_back(std::string(row.device) + " is not loaded (no " + std::string(row.device) +
                               " in /proc/devices): no /dev/" + std::string(row.device) + " or /dev/" +
                               std::string(row.device) + "-tools");
        }
        continue;
      }
      plan.nodes.push_back({.name = std::string(row.name), .major = *node_major, .minor = row.minor});
    }
  }
  if (set != NodeSet::control) {
    for (const uint32_t minor : gpu_minors) {
      plan.nodes.push_back({.name = "nvidia" + std::to_string(minor), .major = *gpu_major, .minor = minor});
    }
  }
  return plan;
}

Result<CreateResult> create_device_nodes(const std::string& dev_root, NodeSet set, bool dry_run) {
  const std::string devices_path = discover::under_root(dev_root, "/proc/devices");
  GPUCTK_TRY_ASSIGN(const auto text, read_file(devices_path, k_max_proc_file));
  auto devices = discover::parse_proc_devices(text);
  if (!devices) {
    return fail_with(devices_path, devices.error());
  }
  std::vector<uint32_t> minors;
  if (set != NodeSet::control) {
    GPUCTK_TRY_ASSIGN(minors, gpu_minors(dev_root));
  }
  GPUCTK_TRY_ASSIGN(const auto plan, plan_device_nodes(*devices, minors, set));
  const std::string dev = discover::under_root(dev_root, "/dev");
  const UniqueFd dir(::open(dev.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    return fail_errno("open " + dev, errno);
  }
  CreateResult result{.nodes = {}, .notes = plan.notes};
  for (const auto& node : plan.nodes) {
    GPUCTK_TRY_ASSIGN(auto made, make_node(dir.get(), dev + "/" + node.name, node, dry_run));
    result.nodes.push_back(std::move(made));
  }
  return result;
}

std::string describe(const NodeResult& result, bool dry_run) {
  const std::string numbers = std::to_string(result.node.major) + ":" + std::to_string(result.node.minor);
  switch (result.change) {
    case NodeChange::made:
      return (dry_run ? "would make " : "made ") + result.path + " (" + numbers + ", mode 0666)";
    case NodeChange::replaced:
      return (dry_run ? "would replace " : "replaced ") + result.path + " (" + numbers + ", was " +
             std::to_string(result.old_major) + ":" + std::to_string(result.old_minor) + ")";
    case NodeChange::unchanged:
      break;
  }
  return "unchanged " + result.path + " (" + numbers + ")";
}

}  // namespace gpuctk::install
