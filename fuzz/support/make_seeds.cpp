// gpuctk_fuzz_seeds OUT_DIR: writes the seed corpus of every fuzz target into OUT_DIR/<target>/, made
// from the repository's files at build time (nothing generated is committed):
//
//   cdi_yaml    the golden specs and tests/data/cdi/*.yaml, and every spec of tests/golden and
//               tests/data/cdi written again as YAML by the codec
//   cdi_json    tests/data/cdi/*.json, and the same specs written as JSON
//   oci_apply   tests/data/oci and golden configs as they are, runc's also with GPU requests added (env,
//               volume mounts, annotations), each with three small specs (tests/data/cdi's valid ones and
//               one cut from a golden spec), in JSON and in YAML
//   ld_cache    every fixture host's etc/ld.so.cache (written by ldconfig), its entries in the old and
//               compat layouts, and a three-entry cache in each layout
//   ld_cache_write  every fixture host's etc/ld.so.cache, and a cache with glibc-hwcaps entries and both
//               extension sections (written by serialize_ld_cache)
//   proc_files  every fixture host's /proc files (devices, params, version, gpus/*/information,
//               mig-minors cut to its first lines, capability files), its bus ids, driver library names
//   cuda_compat_note  the CUDA compat libraries of tests/data/cuda_compat (NVIDIA's, with real notes), and
//               every fixture host's libcuda files (ELF stubs without the note)
//
// Identical seeds of one target are written once. Exit status 0, or 1 with a message.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cdi/codec.hpp"
#include "fixtures/builder/hosts.hpp"
#include "ldcache/cache_file.hpp"
#include "oci/bundle.hpp"
#include "support/fuzz_support.hpp"
#include "util/file.hpp"

namespace {

namespace fs = std::filesystem;
namespace cdi = gpuctk::cdi;
using gpuctk::fuzz::ProcFile;

const std::string k_source_dir = GPUCTK_SOURCE_DIR;

// mig-minors has 4322 lines; the first ones show every line form, and short seeds fuzz faster.
constexpr size_t k_mig_minors_lines = 150;

class Seeds {
 public:
  explicit Seeds(fs::path out) : m_out(std::move(out)) {}

  void add(const std::string& target, const std::string& name, const std::string& bytes) {
    if (!m_seen[target].insert(bytes).second) {
      return;
    }
    const auto dir = m_out / target;
    fs::create_directories(dir);
    auto file_name = name;
    std::ranges::replace(file_name, '/', '_');
    const auto written = gpuctk::write_file_atomic((dir / file_name).string(), bytes, 0644);
    if (!written) {
      throw std::runtime_error(written.error().message);
    }
  }

  void report() const {
    for (const auto& [target, seeds] : m_seen) {
      size_t bytes = 0;
      for (const auto& seed : seeds) {
        bytes += seed.size();
      }
      std::printf("gpuctk_fuzz_seeds: %-10s %4zu seeds, %7zu bytes\n", target.c_str(), seeds.size(), bytes);
    }
  }

 private:
  fs::path m_out;
  std::map<std::string, std::set<std::string>> m_seen;
};

std::string read_or_throw(const fs::path& path) {
  auto text = gpuctk::read_file(path.string());
  if (!text) {
    throw std::runtime_error(text.error().message);
  }
  return std::move(*text);
}

// The regular files of `dir` with `extension` (any when empty), sorted.
std::vector<fs::path> files_in(const fs::path& dir, std::string_view extension = {}) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) {
    return out;
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && (extension.empty() || entry.path().extension() == extension)) {
      out.push_back(entry.path());
    }
  }
  std::ranges::sort(out);
  return out;
}

// A spec small enough to fuzz apply with: the first device and a few of each spec-wide edit.
cdi::Spec small_spec(cdi::Spec spec) {
  spec.devices.resize(std::min<size_t>(spec.devices.size(), 1));
  auto& edits = spec.container_edits;
  constexpr size_t k_keep = 3;
  edits.env.resize(std::min(edits.env.size(), k_keep));
  edits.device_nodes.resize(std::min(edits.device_nodes.size(), k_keep));
  edits.mounts.resize(std::min(edits.mounts.size(), k_keep));
  edits.hooks.resize(std::min(edits.hooks.size(), k_keep));
  return spec;
}

// A spec with every field and strings needing every escape the writers know (as in
// tests/cdi/canonical_yaml_test.cpp): the fast YAML path's escapes and the JSON writer's replacement of
// invalid UTF-8 start covered.
cdi::Spec awkward_spec() {
  std::string all_bytes;
  for (int c = 1; c < 256; ++c) {
    all_bytes.push_back(static_cast<char>(c));
  }
  cdi::Spec spec;
  spec.cdi_version = "1.1.0";
  spec.kind = "example.com/gpu";
  spec.annotations = {{"with space", "a \"quoted\" \\ back"},
                      {"true", "yes"},
                      {"123", "0x1F"},
                      {"", "empty key"},
                      {"bytes", all_bytes},
                      {"unicode \u2028\u2029\ufeff\u0085 \u00e9 \U0001F600", "\t\n\r\x1b"},
                      {"- dash", "# hash: colon {brace} [bracket] & * ! | > ' %"},
                      {"null", "~"}};
  cdi::Device device;
  device.name = "0";
  device.annotations = {{"k", "- not a list"}};
  auto& edits = device.container_edits;
  edits.env = {"A=1", "B= spaced ", "C=\"q\"", "D=multi\nline"};
  edits.device_nodes = {cdi::DeviceNode{.path = "/dev/nvidia0",
                                        .host_path = "/dev/nvidia1",
                                        .type = "c",
                                        .major = 195,
                                        .minor = -1,
                                        .file_mode = 0666,
                                        .permissions = "rw",
                                        .uid = 0,
                                        .gid = 44}};
  edits.mounts = {
      cdi::Mount{.host_path = "/a b", .container_path = "/c", .options = {"ro", "rbind"}, .type = "bind"}};
  edits.hooks = {cdi::Hook{.hook_name = "createContainer",
                           .path = "/usr/bin/gpuctk",
                           .args = {"gpuctk", "hook", "--x=\\y"},
                           .env = {"PATH=/bin"},
                           .timeout = 5}};
  edits.intel_rdt =
      cdi::IntelRdt{.clos_id = "c", .schemata = std::vector<std::string>{}, .enable_monitoring = true};
  edits.additional_gids = {44, 0, 4294967295u};
  edits.net_devices = {cdi::NetDevice{.host_interface_name = "eth0", .name = "net0"}};
  spec.devices = {device, cdi::Device{.name = "all", .container_edits = {.env = {"X=y"}}}};
  spec.container_edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  spec.container_edits.intel_rdt = cdi::IntelRdt{};
  return spec;
}

void cdi_seeds(Seeds& seeds, std::vector<cdi::Spec>& apply_specs) {
  const auto awkward = awkward_spec();
  seeds.add("cdi_yaml", "awkward.yaml", cdi::write_spec(awkward, cdi::Format::yaml));
  seeds.add("cdi_json", "awkward.json", cdi::write_spec(awkward, cdi::Format::json));

  std::vector<std::pair<std::string, fs::path>> spec_files;
  for (const auto& path : files_in(k_source_dir + "/tests/golden")) {
    spec_files.emplace_back("golden-" + path.filename().string(), path);
  }
  for (const auto& path : files_in(k_source_dir + "/tests/data/cdi")) {
    spec_files.emplace_back("data-" + path.filename().string(), path);
  }
  for (const auto& [name, path] : spec_files) {
    const auto format = cdi::format_for_path(path.string());
    if (!format) {
      continue;
    }
    const auto text = read_or_throw(path);
    // The files as they are (the invalid ones too: they reach the error paths).
    seeds.add(*format == cdi::Format::yaml ? "cdi_yaml" : "cdi_json", name, text);
    const auto spec = cdi::parse_spec(text, *format);
    if (!spec) {
      continue;  // a config.json among the golden files, or an invalid test spec
    }
    seeds.add("cdi_yaml", "written-" + name + ".yaml", cdi::write_spec(*spec, cdi::Format::yaml));
    seeds.add("cdi_json", "written-" + name + ".json", cdi::write_spec(*spec, cdi::Format::json));
    if (name == "golden-t4-debian.proc.yaml" || name.starts_with("data-valid")) {
      apply_specs.push_back(small_spec(*spec));
    }
  }
}

// Ways a container asks for GPUs, as edits of its config.
using ConfigEdit = void (*)(nlohmann::ordered_json&);
void add_env(nlohmann::ordered_json& config, std::initializer_list<const char*> env) {
  for (const auto* entry : env) {
    config["process"]["env"].push_back(entry);
  }
}
const std::vector<std::pair<std::string, ConfigEdit>> k_requests = {
    {"as-is", [](nlohmann::ordered_json&) {}},
    {"all", [](nlohmann::ordered_json& c) { add_env(c, {"NVIDIA_VISIBLE_DEVICES=all"}); }},
    {"list",
     [](nlohmann::ordered_json& c) {
       add_env(c, {"NVIDIA_VISIBLE_DEVICES=0,GPU-6c1e9b1c-7b3e-4f62-9c5b-1a2b3c4d5e6f::2,4:1,"
                   "MIG-0d5f3a5e-1c2b-5a6b-8c7d-9e0f1a2b3c4d,nvidia.com/gpu=1",
                   "NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics",
                   "NVIDIA_REQUIRE_CUDA=cuda>=12.0 brand=tesla,driver>=535,driver<536"});
     }},
    {"legacy-cuda", [](nlohmann::ordered_json& c) { add_env(c, {"CUDA_VERSION=12.2.0"}); }},
    {"none-mig-mps",
     [](nlohmann::ordered_json& c) {
       add_env(c, {"NVIDIA_VISIBLE_DEVICES=none", "NVIDIA_MIG_CONFIG_DEVICES=all",
                   "NVIDIA_MIG_MONITOR_DEVICES=all", "CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps",
                   "NVIDIA_DISABLE_REQUIRE=1"});
       c["process"]["capabilities"]["bounding"].push_back("CAP_SYS_ADMIN");
     }},
    {"volume-mounts",
     [](nlohmann::ordered_json& c) {
       for (const auto* destination :
            {"/var/run/nvidia-container-devices/0", "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu/1",
             "/var/run/nvidia-container-devices/cdi/nvidia.com/gpu=all"}) {
         c["mounts"].push_back({{"destination", destination},
                                {"type", "bind"},
                                {"source", "/dev/null"},
                                {"options", {"rbind", "ro"}}});
       }
     }},
    {"annotations",
     [](nlohmann::ordered_json& c) {
       c["annotations"]["cdi.k8s.io/gpu"] = "nvidia.com/gpu=0,nvidia.com/gpu=all";
       add_env(c, {"NVIDIA_VISIBLE_DEVICES=void"});
     }},
};

void apply_seeds(Seeds& seeds, const std::vector<cdi::Spec>& specs) {
  std::vector<fs::path> configs = files_in(k_source_dir + "/tests/data/oci", ".json");
  for (const auto& path : files_in(k_source_dir + "/tests/golden", ".json")) {
    configs.push_back(path);
  }
  for (const auto& path : configs) {
    const auto config = gpuctk::oci::parse_config(read_or_throw(path));
    if (!config) {
      continue;
    }
    // Every request on the smallest config (runc's), the others as they are.
    const bool all_requests = path.filename() == "runc-spec-config.json";
    for (const auto& [request, edit] : k_requests) {
      if (!all_requests && request != "as-is") {
        continue;
      }
      auto edited = *config;
      edit(edited);
      const auto text = edited.dump(1);
      for (size_t i = 0; i < specs.size(); ++i) {
        const auto name = path.stem().string() + "-" + request + "-spec" + std::to_string(i);
        const uint8_t flags = gpuctk::fuzz::k_envvar_when_unprivileged | gpuctk::fuzz::k_volume_mounts;
        seeds.add("oci_apply", name + ".json",
                  gpuctk::fuzz::join_apply_input(flags, text, cdi::write_spec(specs[i], cdi::Format::json)));
        seeds.add("oci_apply", name + ".yaml",
                  gpuctk::fuzz::join_apply_input(flags | gpuctk::fuzz::k_spec_is_yaml, text,
                                                 cdi::write_spec(specs[i], cdi::Format::yaml)));
      }
    }
  }
}

std::string first_lines(const std::string& text, size_t lines) {
  size_t pos = 0;
  for (size_t i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos);
    if (pos != std::string::npos) {
      ++pos;
    }
  }
  return pos == std::string::npos ? text : text.substr(0, pos);
}

void cuda_compat_seeds(Seeds& seeds) {
  for (const auto& path : files_in(k_source_dir + "/tests/data/cuda_compat")) {
    if (path.extension() != ".md") {
      seeds.add("cuda_compat_note", path.filename().string(), read_or_throw(path));
    }
  }
}

void proc_file(Seeds& seeds, const std::string& name, ProcFile kind, const std::string& text) {
  seeds.add("proc_files", name, gpuctk::fuzz::proc_file_input(kind, text));
}

void host_seeds(Seeds& seeds, const std::string& host_name) {
  gpuctk::fixture::Options options;
  options.nodes = gpuctk::fixture::NodeCreation::RegularFiles;
  options.mock_nvml_library.clear();  // the libraries' contents do not matter here, only their names
  options.mock_cuda_library.clear();
  auto fixture = gpuctk::fixture::materialise_temp(host_name, options);
  if (!fixture) {
    throw std::runtime_error(fixture.error().message);
  }
  const auto& host = fixture->host;

  // ld.so.cache as ldconfig wrote it, then its entries in the other layouts.
  const auto cache_bytes = read_or_throw(host.ld_cache);
  seeds.add("ld_cache", host_name + "-ldconfig", cache_bytes);
  seeds.add("ld_cache_write", host_name + "-ldconfig", cache_bytes);
  {
    // glibc-hwcaps entries (one with an ISA level) before a plain one, and both extension sections.
    constexpr uint64_t k_hwcaps = uint64_t{1} << 62;
    gpuctk::ldcache::LdCache hwcaps;
    hwcaps.extensions.generator = "ldconfig (GNU libc) stable release version 2.36";
    hwcaps.extensions.hwcaps_subdirs = {"x86-64-v2", "x86-64-v3"};
    const std::string dir = "/usr/lib/x86_64-linux-gnu/";
    const auto entry = [&](const std::string& subdir, uint64_t hwcap) {
      return gpuctk::ldcache::LdCacheEntry{.key = "libz.so.1",
                                           .value = dir + subdir + "libz.so.1",
                                           .flags = 0x0303,
                                           .osversion = 0,
                                           .hwcap = hwcap};
    };
    hwcaps.entries = {entry("glibc-hwcaps/x86-64-v2/", k_hwcaps | 0),
                      entry("glibc-hwcaps/x86-64-v3/", k_hwcaps | (uint64_t{3} << 32) | 1), entry("", 0)};
    const auto bytes = gpuctk::ldcache::serialize_ld_cache(hwcaps);
    if (!bytes) {
      throw std::runtime_error(bytes.error().message);
    }
    seeds.add("ld_cache", "glibc-hwcaps", *bytes);
    seeds.add("ld_cache_write", "glibc-hwcaps", *bytes);
  }
  const auto cache = gpuctk::ldcache::parse_ld_cache(cache_bytes);
  if (!cache) {
    throw std::runtime_error(host.ld_cache + ": " + cache.error().message);
  }
  using gpuctk::ldcache::LdCacheFormat;
  seeds.add("ld_cache", host_name + "-old",
            gpuctk::fuzz::write_ld_cache(cache->entries, LdCacheFormat::old_only));
  seeds.add("ld_cache", host_name + "-compat",
            gpuctk::fuzz::write_ld_cache(cache->entries, LdCacheFormat::compat));
  const std::vector<gpuctk::ldcache::LdCacheEntry> few(
      cache->entries.begin(),
      cache->entries.begin() + static_cast<ptrdiff_t>(std::min<size_t>(3, cache->entries.size())));
  for (const auto format : {LdCacheFormat::new_only, LdCacheFormat::old_only, LdCacheFormat::compat}) {
    seeds.add("ld_cache", "three-entries-" + std::to_string(static_cast<int>(format)),
              gpuctk::fuzz::write_ld_cache(few, format));
  }
  for (const auto& entry : cache->entries) {
    const auto file_name = fs::path(entry.value).filename().string();
    proc_file(seeds, "library-" + file_name, ProcFile::library_file_name, file_name);
    // A fixture may model a dangling link (libcuda.so.1 without its library): only files that are there.
    if (file_name.starts_with("libcuda.so")) {
      if (auto bytes = gpuctk::read_file(host.driver_path(entry.value))) {
        seeds.add("cuda_compat_note", host_name + "-" + file_name, *bytes);
      }
    }
  }

  const fs::path proc = host.dev_path("/proc");
  proc_file(seeds, host_name + "-devices", ProcFile::proc_devices, read_or_throw(proc / "devices"));
  const auto params = read_or_throw(proc / "driver/nvidia/params");
  proc_file(seeds, host_name + "-params", ProcFile::driver_params, params);
  proc_file(seeds, host_name + "-params-kv", ProcFile::key_value_lines, params);
  proc_file(seeds, host_name + "-version", ProcFile::driver_version,
            read_or_throw(proc / "driver/nvidia/version"));
  const auto gpus = proc / "driver/nvidia/gpus";
  if (fs::is_directory(gpus)) {
    for (const auto& entry : fs::directory_iterator(gpus)) {
      const auto bus = entry.path().filename().string();
      const auto information = read_or_throw(entry.path() / "information");
      proc_file(seeds, host_name + "-information-" + bus, ProcFile::gpu_information, information);
      proc_file(seeds, host_name + "-information-kv-" + bus, ProcFile::key_value_lines, information);
      proc_file(seeds, "bus-" + bus, ProcFile::pci_bus_id, bus);
      // NVML's spelling: 8-digit domain, upper case; and the domain-less one.
      std::string nvml = "0000" + bus;
      std::ranges::transform(nvml, nvml.begin(), [](char c) { return static_cast<char>(std::toupper(c)); });
      proc_file(seeds, "bus-nvml-" + bus, ProcFile::pci_bus_id, nvml);
      proc_file(seeds, "bus-short-" + bus, ProcFile::pci_bus_id, bus.substr(5));
    }
  }
  const auto mig_minors = proc / "driver/nvidia-caps/mig-minors";
  if (fs::exists(mig_minors)) {
    proc_file(seeds, host_name + "-mig-minors", ProcFile::mig_minors,
              first_lines(read_or_throw(mig_minors), k_mig_minors_lines));
  }
  const auto capabilities = proc / "driver/nvidia/capabilities";
  if (fs::is_directory(capabilities)) {
    for (const auto& entry : fs::recursive_directory_iterator(capabilities)) {
      if (entry.is_regular_file()) {
        const auto text = read_or_throw(entry.path());
        const auto name = fs::relative(entry.path(), capabilities).string();
        proc_file(seeds, host_name + "-cap-" + name, ProcFile::capability_file, text);
        proc_file(seeds, host_name + "-cap-kv-" + name, ProcFile::key_value_lines, text);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gpuctk_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  try {
    Seeds seeds{fs::path(argv[1])};
    std::vector<cdi::Spec> apply_specs;
    cdi_seeds(seeds, apply_specs);
    apply_seeds(seeds, apply_specs);
    cuda_compat_seeds(seeds);
    const auto hosts = gpuctk::fixture::list_hosts();
    if (!hosts) {
      throw std::runtime_error(hosts.error().message);
    }
    for (const auto& host : *hosts) {
      host_seeds(seeds, host);
    }
    seeds.report();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuctk_fuzz_seeds: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
