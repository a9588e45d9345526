// gpuctk info: what discovery finds on this host, for people (text) or programs (--json).
#include <cstdio>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "discover/discover.hpp"

namespace gpuctk::cli {

namespace {

struct InfoArgs {
  bool json = false;
  std::string driver_root = "/";
  std::string dev_root = "/";
  std::string mode = "auto";
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

std::string to_json(const discover::Inventory& inv) {
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
  out["warnings"] = inv.warnings;
  return out.dump(2) + "\n";
}

std::string to_text(const discover::Inventory& inv) {
  std::string out;
  const auto line = [&out](const std::string& s) { out += s + "\n"; };
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
  line("Warnings:    " + std::to_string(inv.warnings.size()));
  for (const auto& w : inv.warnings) {
    line("  " + w);
  }
  return out;
}

}  // namespace

Action define_info(CLI::App& command) {
  auto args = std::make_shared<InfoArgs>();
  command.add_flag("--json", args->json, "Print JSON instead of text");
  command.add_option("--driver-root", args->driver_root, "Root of the driver files")->capture_default_str();
  command.add_option("--dev-root", args->dev_root, "Root of /dev, /proc and /sys")->capture_default_str();
  command.add_option("--mode", args->mode, "auto, nvml, proc or management")
      ->capture_default_str()
      ->check(value_check(discover::parse_mode));
  return [args] {
    auto mode = discover::parse_mode(args->mode);  // checked while parsing
    if (!mode) {
      return report(mode.error());
    }
    auto inventory = discover::discover({args->driver_root, args->dev_root, *mode, {}});
    if (!inventory) {
      return report(inventory.error());
    }
    const std::string text = args->json ? to_json(*inventory) : to_text(*inventory);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return static_cast<int>(k_exit_ok);
  };
}

}  // namespace gpuctk::cli
