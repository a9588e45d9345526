// What one Nvml::sample costs (gpuctk-exporter samples every device at every collection), through the
// mock NVML of the DGX-A100-like fixture host with a telemetry file giving every reading of every GPU:
// the per-call cost of the NVML ABI as gpuctk drives it (the mock answers from memory after one stat per
// call; a real driver's calls go to the kernel and cost more).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "discover/nvml.hpp"
#include "fixtures/builder/hosts.hpp"
#include "util/file.hpp"

namespace {

using namespace gpuctk;

// Every key of a telemetry sample line, for the device `uuid`.
std::string sample_line(const std::string& uuid, bool mig) {
  if (mig) {
    return "sample\tuuid=" + uuid + "\tfb_used=3000\tfb_free=20000000000\tfb_reserved=1000\n";
  }
  return "sample\tuuid=" + uuid +
         "\tsm_clock=1410\tmemory_clock=1215\tgpu_temp=41\tmemory_temp=39\tpower_mw=61234\tenergy_mj=9876543"
         "\tpcie_tx=1100\tpcie_rx=2200\tpcie_replays=3\tgpu_util=97\tmemory_util=45\tencoder_util=12"
         "\tdecoder_util=13\tfb_used=1000000\tfb_free=40000000000\tfb_reserved=500000000"
         "\tremapped_correctable=4\tremapped_uncorrectable=5\tremap_pending=0\tremap_failure=0"
         "\tnvlink_tx_kib=123456789\tnvlink_rx_kib=987654321\tecc_sbe_volatile=6\tecc_dbe_volatile=7"
         "\tecc_sbe_aggregate=8\tecc_dbe_aggregate=9\tretired_sbe=10\tretired_dbe=11\tretired_pending=0\n";
}

[[noreturn]] void die(const std::string& what) {
  std::cerr << what << "\n";
  std::exit(1);
}

// The host materialised once, its telemetry file written, and NVML open on it.
struct Host {
  fixture::Fixture fixture;
  discover::Nvml nvml;
  discover::NvmlReport report;
};

Host& host() {
  static Host h = [] {
    auto f = fixture::materialise_temp("dgx-a100");
    if (!f) {
      die("materialise dgx-a100: " + f.error().message);
    }
    auto nvml = discover::Nvml::open(f->host.nvml_library);
    if (!nvml) {
      die(nvml.error().message);
    }
    auto report = nvml->report();
    if (!report) {
      die(report.error().message);
    }
    std::string telemetry;
    for (const auto& gpu : report->gpus) {
      telemetry += sample_line(gpu.uuid, false);
      for (const auto& mig : gpu.migs) {
        telemetry += sample_line(mig.uuid, true);
      }
    }
    const auto path = std::filesystem::path(f->host.nvml_config).parent_path() / "nvml-telemetry";
    if (auto written = write_file_atomic(path.string(), telemetry, 0644, Durability::atomic_only); !written) {
      die(written.error().message);
    }
    return Host{std::move(*f), std::move(*nvml), std::move(*report)};
  }();
  return h;
}

// One whole GPU per iteration, every GPU in turn.
void BM_NvmlSampleGpu(benchmark::State& state) {
  const auto& gpus = host().report.gpus;
  size_t next = 0;
  for (auto _ : state) {
    auto sample = host().nvml.sample(gpus[next].index);
    if (!sample) {
      state.SkipWithError(sample.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(sample);
    next = (next + 1) % gpus.size();
  }
}
BENCHMARK(BM_NvmlSampleGpu)->Unit(benchmark::kMicrosecond);

// One MIG device per iteration (only its memory answers; every other call is refused).
void BM_NvmlSampleMig(benchmark::State& state) {
  std::vector<std::pair<uint32_t, uint32_t>> migs;
  for (const auto& gpu : host().report.gpus) {
    for (const auto& mig : gpu.migs) {
      migs.emplace_back(gpu.index, mig.index);
    }
  }
  if (migs.empty()) {
    state.SkipWithError("no MIG device on the host");
    return;
  }
  size_t next = 0;
  for (auto _ : state) {
    auto sample = host().nvml.sample(migs[next].first, migs[next].second);
    if (!sample) {
      state.SkipWithError(sample.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(sample);
    next = (next + 1) % migs.size();
  }
}
BENCHMARK(BM_NvmlSampleMig)->Unit(benchmark::kMicrosecond);

}  // namespace
