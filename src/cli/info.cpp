// gpuctk info: what discovery finds on this host, for people (text) or programs (--json): NVIDIA's driver
// and GPUs, the AMD and Intel GPUs, the CDI specs the hooks read and what is wrong with them.
#include <cstdio>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cdi/hook_programs.hpp"
#include "cdi/registry.hpp"
#include "cli/commands.hpp"
#include "cli/discovery_options.hpp"
#include "config/config.hpp"
#include "discover/discover.hpp"
#include "discover/host_fs.hpp"
#include "discover/node.hpp"
#include "util/strings.hpp"

namespace gpuctk::cli {

namespace {

struct InfoArgs : DiscoveryArgs {
  bool json = false;
};

std::string_view module_name(discover::KernelModule module) {
  switch (module) {
    case discover::KernelModule::proprietary:
      return "proprietary";
    case discover::KernelModule::open:
      return "open";
    case discover::KernelModule::unknown:
      break;
  }
  return "unknown";
}

std::string_view kind_name(discover::FileKind kind) {
  switch (kind) {
    case discover::FileKind::library:
      return "library";
    case discover::FileKind::library32:
      return "library32";
    case discover::FileKind::binary:
      return "binary";
    case discover::FileKind::firmware:
      return "firmware";
    case discover::FileKind::config:
      return "config";
    case discover::FileKind::xorg_module:
      return "xorg_module";
    case discover::FileKind::ipc:
      return "ipc";
  }
  return "unknown";
}

// Libraries counted per capability; 32-bit ones under "compat32"; unknown ones under "other".
std::map<std::string, int> library_counts(const discover::Inventory& inv) {
  std::map<std::string, int> counts;
  for (const auto& file : inv.files) {
    if (file.kind == discover::FileKind::library32) {
      ++counts["compat32"];
    } else if (file.kind == discover::FileKind::library) {
      ++counts[file.capability ? std::string(discover::capability_name(*file.capability)) : "other"];
    }
  }
  return counts;
}

nlohmann::ordered_json node_json(const discover::DeviceNode& n) {
  return {{"path", n.path},   {"hostPath", n.host_path}, {"type", std::string(1, n.type)},
          {"major", n.major}, {"minor", n.minor},        {"mode", n.mode},
          {"gid", n.gid}};
}

// What `info` shows besides NVIDIA's inventory: the other vendors' GPUs, the CDI specs the hooks would
// read, and what to warn about.
struct Extras {
  bool nvidia = true;                 // the NVIDIA driver is loaded
  discover::DrmInventory drm;         // AMD and Intel GPUs
  std::vector<std::string> specs;     // "<file> (<n> devices)"
  std::vector<std::string> warnings;  // besides discovery's: other vendors', the specs'
  std::vector<std::string> notes;     // no NVIDIA driver
};

nlohmann::ordered_json drm_json(const discover::DrmGpu& gpu) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const auto& n : gpu.nodes) {
    nodes.push_back(node_json(n));
  }
  return {{"vendor", discover::drm_vendor_name(gpu.vendor)},
          {"busId", gpu.bus_id},
          {"driver", gpu.driver},
          {"uuid", gpu.uuid},
          {"productName", gpu.product_name},
          {"partition", gpu.partition},
          {"partitions", gpu.partitions},
          {"nodes", std::move(nodes)}};
}

std::string to_json(const discover::Inventory& inv, const Extras& extras) {
  nlohmann::ordered_json out;
  out["driverVersion"] = inv.driver_version;
  out["kernelModule"] = module_name(inv.kernel_module);
  out["cudaVersion"] = inv.cuda_version;
  out["gpuSource"] = inv.gpu_source == discover::GpuSource::nvml ? "nvml" : "proc";
  out["gpus"] = nlohmann::ordered_json::array();
  for (const auto& gpu : inv.gpus) {
    nlohmann::ordered_json g{{"index", gpu.index},
                             {"minor", gpu.minor},
                             {"uuid", gpu.uuid},
                             {"model", gpu.model},
                             {"busId", gpu.bus_id},
                             {"memoryBytes", gpu.memory_bytes},
                             {"migEnabled", gpu.mig_enabled},
                             {"node", node_json(gpu.node)}};
    g["drmNodes"] = nlohmann::ordered_json::array();
    for (const auto& n : gpu.drm_nodes) {
      g["drmNodes"].push_back(node_json(n));
    }
    g["migDevices"] = nlohmann::ordered_json::array();
    for (const auto& mig : gpu.mig_devices) {
      g["migDevices"].push_back({{"index", mig.index},
                                 {"gi", mig.gi},
                                 {"ci", mig.ci},
                                 {"uuid", mig.uuid},
                                 {"profile", mig.profile},
                                 {"memoryBytes", mig.memory_bytes},
                                 {"giAccess", node_json(mig.gi_access)},
                                 {"ciAccess", node_json(mig.ci_access)}});
    }
    out["gpus"].push_back(std::move(g));
  }
  out["controlNodes"] = nlohmann::ordered_json::array();
  for (const auto& n : inv.control_nodes) {
    out["controlNodes"].push_back(node_json(n));
  }
  out["files"] = nlohmann::ordered_json::array();
  for (const auto& f : inv.files) {
    out["files"].push_back(
        {{"kind", kind_name(f.kind)},
         {"hostPath", f.host_path},
         {"containerPath", f.container_path},
         {"capability", f.capability ? std::string(discover::capability_name(*f.capability)) : ""}});
  }
  out["libraryCounts"] = library_counts(inv);
  out["libraryDirs"] = inv.library_dirs;
  out["otherGpus"] = nlohmann::ordered_json::array();
  for (const auto& gpu : extras.drm.gpus) {
    out["otherGpus"].push_back(drm_json(gpu));
  }
  out["specs"] = extras.specs;
  std::vector<std::string> warnings = inv.warnings;
  warnings.insert(warnings.end(), extras.warnings.begin(), extras.warnings.end());
  out["warnings"] = warnings;
  out["notes"] = extras.notes;
  out["nvidiaDriver"] = extras.nvidia;  // false: the NVIDIA fields above are empty
  return out.dump(2) + "\n";
}

// "  GPU 2  amdgpu  0000:46:00.0  /dev/dri/renderD130  0x5B03…  AMD Instinct MI300X OAM  partition 0 of 8".
std::string drm_row(const discover::DrmGpu& gpu, size_t index) {
  std::string row = "  GPU " + std::to_string(index) + "  " + gpu.driver + "  " + gpu.bus_id;
  for (const auto& node : gpu.nodes) {
    if (node.path.find("/renderD") != std::string::npos) {
      row += "  " + node.path;
    }
  }
  if (!gpu.uuid.empty()) {
    row += "  " + gpu.uuid;
  }
  if (!gpu.product_name.empty()) {
    row += "  " + gpu.product_name;
  }
  if (gpu.partitions > 1) {
    row += "  partition " + std::to_string(gpu.partition) + " of " + std::to_string(gpu.partitions);
  }
  return row;
}

void other_gpus_text(const Extras& extras, std::string& out) {
  for (const auto vendor : {discover::DrmVendor::amd, discover::DrmVendor::intel}) {
    std::vector<const discover::DrmGpu*> gpus;
    for (const auto& gpu : extras.drm.gpus) {
      if (gpu.vendor == vendor) {
        gpus.push_back(&gpu);
      }
    }
    if (gpus.empty()) {
      continue;
    }
    const std::string title = vendor == discover::DrmVendor::amd ? "AMD GPUs:    " : "Intel GPUs:  ";
    out += title + std::to_string(gpus.size()) + "\n";
    for (size_t i = 0; i < gpus.size(); ++i) {
      out += drm_row(*gpus[i], i) + "\n";
    }
  }
}

std::string to_text(const discover::Inventory& inv, const Extras& extras) {
  std::string out;
  const auto line = [&out](const std::string& s) { out += s + "\n"; };
  std::vector<std::string> warnings = inv.warnings;
  warnings.insert(warnings.end(), extras.warnings.begin(), extras.warnings.end());
  const auto tail = [&] {
    other_gpus_text(extras, out);
    line("CDI specs:   " + (extras.specs.empty() ? std::string("none") : join(extras.specs, ", ")));
    for (const auto& note : extras.notes) {
      line("Note:        " + note);
    }
    line("Warnings:    " + std::to_string(warnings.size()));
    for (const auto& w : warnings) {
      line("  " + w);
    }
  };
  if (!extras.nvidia) {
    tail();
    return out;
  }
  line("Driver:      " + inv.driver_version + " (" + std::string(module_name(inv.kernel_module)) +
       " kernel module)");
  // Unknown without NVML, or with an NVML too old to say.
  const bool nvml = inv.gpu_source == discover::GpuSource::nvml;
  line("CUDA:        " + (!inv.cuda_version.empty() ? inv.cuda_version
                          : nvml                    ? "unknown"
                                                    : "unknown (no NVML)"));
  line("GPU source:  " +
       std::string(inv.gpu_source == discover::GpuSource::nvml ? "NVML" : "/proc/driver/nvidia"));
  line("GPUs:        " + std::to_string(inv.gpus.size()));
  for (const auto& gpu : inv.gpus) {
    std::string row = "  GPU " + std::to_string(gpu.index) + "  " + gpu.model + "  " + gpu.bus_id + "  " +
                      gpu.node.path + "  " + (gpu.uuid.empty() ? "(no UUID)" : gpu.uuid);
    if (gpu.memory_bytes != 0) {
      row += "  " + std::to_string(gpu.memory_bytes >> 30) + " GiB";
    }
    if (gpu.mig_enabled) {
      row += "  MIG enabled";
    }
    line(row);
    for (const auto& mig : gpu.mig_devices) {
      line("    MIG " + std::to_string(gpu.index) + ":" + std::to_string(mig.index) + "  " +
           (mig.profile.empty() ? "?" : mig.profile) + "  gi " + std::to_string(mig.gi) + " ci " +
           std::to_string(mig.ci) + "  " + mig.gi_access.path + " " + mig.ci_access.path +
           (mig.uuid.empty() ? "" : "  " + mig.uuid));
    }
  }
  std::string nodes;
  for (const auto& n : inv.control_nodes) {
    nodes += (nodes.empty() ? "" : ", ") + n.path;
  }
  line("Control:     " + nodes);
  std::string counts;
  for (const auto& [cap, count] : library_counts(inv)) {
    counts += (counts.empty() ? "" : ", ") + cap + " " + std::to_string(count);
  }
  line("Libraries:   " + counts);
  std::map<std::string_view, int> kinds;
  for (const auto& f : inv.files) {
    if (f.kind != discover::FileKind::library && f.kind != discover::FileKind::library32) {
      ++kinds[kind_name(f.kind)];
    }
  }
  std::string other;
  for (const auto& [kind, count] : kinds) {
    other += (other.empty() ? "" : ", ") + std::string(kind) + " " + std::to_string(count);
  }
  line("Other files: " + (other.empty() ? std::string("none") : other));
  std::string dirs;
  for (const auto& d : inv.library_dirs) {
    dirs += (dirs.empty() ? "" : ", ") + d;
  }
  line("Lib dirs:    " + dirs);
  tail();
  return out;
}

// The CDI specs of the config's spec directories (what the hooks resolve devices in), each with its
// device count, and a warning per hook program one of them runs that this host does not have.
void read_specs(Extras& extras) {
  const auto dirs = config::read_config("").config.spec_dirs;
  const cdi::Registry registry = cdi::scan_spec_dirs(dirs);
  std::map<std::string, std::pair<const cdi::Spec*, size_t>> files;
  for (const auto& [name, device] : registry.devices) {
    auto& [spec, count] = files[device.spec_file];
    spec = device.spec.get();
    ++count;
  }
  for (const auto& [file, entry] : files) {
    extras.specs.push_back(file + " (" + std::to_string(entry.second) +
                           (entry.second == 1 ? " device)" : " devices)"));
    for (const auto& missing : cdi::missing_hook_programs(*entry.first)) {
      extras.warnings.push_back(file + ": " + missing);
    }
  }
  extras.warnings.insert(extras.warnings.end(), registry.errors.begin(), registry.errors.end());
}

// Every vendor's GPUs (as `gpuctk labels` finds them: NVIDIA's only where its driver is loaded), the
// specs, and an error only when there is no GPU at all.
Result<std::string> info(const InfoArgs& args, discover::Mode mode) {
  const discover::DiscoverOptions options{args.driver_root, args.dev_root, mode, {}, {}};
  GPUCTK_TRY(discover::check_roots(options));
  GPUCTK_TRY_ASSIGN(auto node, discover::discover_node(options));
  Extras extras;
  extras.nvidia = !node.nvidia.driver_version.empty();
  extras.drm = std::move(node.drm);
  if (!extras.nvidia && extras.drm.gpus.empty()) {
    return fail("no GPU on this host: no NVIDIA driver loaded (" +
                discover::under_root(args.dev_root, "/proc/driver/nvidia") +
                " missing), no AMD or Intel GPU in " + extras.drm.searched);
  }
  extras.warnings = extras.drm.warnings;
  if (!extras.nvidia) {
    extras.notes.push_back("no NVIDIA driver loaded (" +
                           discover::under_root(args.dev_root, "/proc/driver/nvidia") + " missing)");
  }
  read_specs(extras);
  return args.json ? to_json(node.nvidia, extras) : to_text(node.nvidia, extras);
}

}  // namespace

Action define_info(CLI::App& command) {
  auto args = std::make_shared<InfoArgs>();
  command.add_flag("--json", args->json, "Print JSON instead of text");
  add_discovery_options(command, *args, ModeChoice::spec);
  return [args] {
    auto mode = discover::parse_mode(args->mode);  // checked while parsing
    if (!mode) {
      return report(mode.error());
    }
    auto text = info(*args, *mode);
    if (!text) {
      return report(text.error());
    }
    std::fwrite(text->data(), 1, text->size(), stdout);
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
