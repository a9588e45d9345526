// In-process cost of one scrape's text (issue 35): metrics::render of dcgm-exporter's default counters for
// 8 A100s in MIG mode with 7 MIG devices each (tests/metrics/sample_collection.hpp: every GPU reading NVML
// gives, each MIG device its memory, every third MIG device held by three pods, the others by one), into
// a buffer kept between scrapes as the exporter keeps it. Also attribute + apply of those 80 holders.
#include <benchmark/benchmark.h>

#include <string>

#include "metrics/attribution.hpp"
#include "metrics/sample_collection.hpp"

namespace {

using namespace gpuctk::metrics;

void BM_RenderEightGpusFiftySixMig(benchmark::State& state) {
  const Collection collection = test::large_collection(8, 7);
  std::string out;
  for (auto _ : state) {
    render(default_counters().counters, collection, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out.size()));
}
BENCHMARK(BM_RenderEightGpusFiftySixMig)->Unit(benchmark::kMicrosecond);

void BM_AttributeAndApply(benchmark::State& state) {
  Collection collection = test::large_collection(8, 7);
  std::vector<ContainerDevices> listed;
  for (const auto& device : collection.devices) {
    for (const auto& holder : device.holders) {
      listed.push_back(ContainerDevices{holder.pod,
                                        holder.namespace_name,
                                        holder.container,
                                        "nvidia.com/mig-1g.5gb",
                                        {device.mig_uuid + "::0"}});
    }
  }
  for (auto _ : state) {
    const Attribution attribution = attribute(listed);
    apply(attribution, collection);
    benchmark::DoNotOptimize(collection.devices.data());
  }
}
BENCHMARK(BM_AttributeAndApply)->Unit(benchmark::kMicrosecond);

}  // namespace
