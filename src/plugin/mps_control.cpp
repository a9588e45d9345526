#include "plugin/mps_control.hpp"

#include <algorithm>
#include <map>

#include "plugin/mps.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

constexpr uint64_t k_mib = 1024 * 1024;

// One GPU of a shared resource: its replicas counted, its memory known or 0.
struct SharedGpu {
  std::string uuid;
  uint64_t memory_bytes = 0;
  uint32_t replicas = 0;
};

// The resource's GPUs by NVML index, replicas counted; errors for what MPS cannot share.
Result<std::map<uint32_t, SharedGpu>> shared_gpus(const Resource& resource) {
  std::map<uint32_t, SharedGpu> gpus;
  for (const auto& device : resource.devices) {
    if (device.is_mig()) {
      return fail(resource.name + ": MPS does not share MIG devices (MIG device " + device.index + ")");
    }
    auto& gpu = gpus[device.gpu];
    gpu.uuid = device.uuid;
    gpu.memory_bytes = device.memory_bytes;
    ++gpu.replicas;
  }
  return gpus;
}

// Every GPU of one daemon has the same replicas: the daemon has one default thread percentage.
Result<uint32_t> replicas_per_gpu(const std::string& resource, const std::map<uint32_t, SharedGpu>& gpus) {
  const auto& [first_index, first] = *gpus.begin();
  for (const auto& [index, gpu] : gpus) {
    if (gpu.replicas != first.replicas) {
      return fail(resource + ": GPU " + std::to_string(index) + " has " + std::to_string(gpu.replicas) +
                  " replicas, GPU " + std::to_string(first_index) + " has " + std::to_string(first.replicas) +
                  " (MPS sets one thread percentage per daemon)");
    }
  }
  return first.replicas;
}

Result<MpsDaemonPlan> plan_daemon(const Config& config, const Resource& resource) {
  GPUCTK_TRY_ASSIGN(const auto gpus, shared_gpus(resource));
  GPUCTK_TRY_ASSIGN(const uint32_t replicas, replicas_per_gpu(resource.name, gpus));
  MpsDaemonPlan plan;
  plan.resource = resource.name;
  plan.pipe_dir = mps_pipe_dir(config.mps_root, resource.name);
  plan.log_dir = mps_log_dir(config.mps_root, resource.name);
  plan.thread_percentage = 100 / replicas;
  for (const auto& [index, gpu] : gpus) {
    plan.gpus.push_back(index);
    plan.uuids.push_back(gpu.uuid);
    if (gpu.memory_bytes > 0) {  // NVIDIA skips a device of unknown memory
      plan.commands.push_back("set_default_device_pinned_mem_limit " + std::to_string(index) + " " +
                              std::to_string(gpu.memory_bytes / replicas / k_mib) + "M");
    }
  }
  plan.commands.push_back("set_default_active_thread_percentage " + std::to_string(plan.thread_percentage));
  plan.environment = {"CUDA_MPS_PIPE_DIRECTORY=" + plan.pipe_dir, "CUDA_MPS_LOG_DIRECTORY=" + plan.log_dir,
                      "CUDA_VISIBLE_DEVICES=" + join(plan.uuids, ",")};
  return plan;
}

}  // namespace

Result<std::vector<MpsDaemonPlan>> plan_mps_daemons(const Config& config,
                                                    const std::vector<Resource>& resources) {
  std::vector<MpsDaemonPlan> plans;
  if (config.sharing != labels::SharingStrategy::mps) {
    return plans;
  }
  for (const auto& resource : resources) {
    const bool shared = std::ranges::any_of(resource.devices, [](const Device& d) { return d.replicas > 0; });
    if (!shared || resource.devices.empty()) {
      continue;  // NVIDIA: "Resource is not shared"
    }
    GPUCTK_TRY_ASSIGN(auto plan, plan_daemon(config, resource));
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::string mps_shm_size(std::string_view meminfo) {
  constexpr std::string_view key = "MemTotal:";
  for (const auto line : split(meminfo, '\n')) {
    if (!line.starts_with(key)) {
      continue;
    }
    const auto rest = trim(line.substr(key.size()));
    const auto space = rest.find(' ');
    const auto total = parse_unsigned(rest.substr(0, space));
    if (!total) {
      return std::string(k_mps_fallback_shm_size);
    }
    const auto unit = space == std::string_view::npos ? std::string_view() : trim(rest.substr(space));
    return std::to_string(*total / 2) + std::string(unit.substr(0, 1));
  }
  return std::string(k_mps_fallback_shm_size);
}

std::string mps_shm_mount_data(std::string_view size) {
  return "size=" + std::string(size);
}

Result<void> check_thread_percentage(std::string_view answer, uint32_t want) {
  // The control daemon prints the percentage with one decimal ("25.0"); 100 / replicas is whole.
  const auto text = trim(answer);
  const auto dot = text.find('.');
  const auto whole = parse_u32(text.substr(0, dot));
  const auto fraction = dot == std::string_view::npos ? std::string_view("0") : text.substr(dot + 1);
  const bool zero_fraction =
      !fraction.empty() && std::ranges::all_of(fraction, [](char c) { return c == '0'; });
  if (!whole || *whole != want || !zero_fraction) {
    return fail("get_default_active_thread_percentage answered " + quote(answer) + ", not " +
                std::to_string(want));
  }
  return {};
}

Result<std::vector<std::string>> mps_resource_components(std::string_view resource) {
  std::vector<std::string> out;
  for (const auto part : split(resource, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return fail("resource " + quote(resource) + ": not a name for a folder below the MPS root");
    }
    out.emplace_back(part);
  }
  return out;
}

}  // namespace gpuctk::plugin
