// In-process costs of the generator's stages on the DGX-A100-like fixture host (8 GPUs, 4 in MIG mode).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <iostream>

#include "cdi/codec.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "fixtures/builder/hosts.hpp"
#include "ldcache/cache_file.hpp"
#include "util/file.hpp"

namespace {

using namespace gpuctk;

const fixture::Fixture& dgx() {
  static auto fixture = [] {
    auto f = fixture::materialise_temp("dgx-a100");
    if (!f) {
      std::cerr << "materialise dgx-a100: " << f.error().message << "\n";
      std::exit(1);
    }
    return std::move(*f);
  }();
  return fixture;
}

discover::DiscoverOptions options(discover::Mode mode) {
  return {dgx().host.driver_root, dgx().host.dev_root, mode, {}, {}};
}

void BM_ParseLdCache(benchmark::State& state) {
  const auto bytes = read_file(dgx().host.ld_cache).value();
  for (auto _ : state) {
    benchmark::DoNotOptimize(ldcache::parse_ld_cache(bytes));
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_ParseLdCache);

void BM_Discover(benchmark::State& state, discover::Mode mode) {
  const auto opts = options(mode);
  for (auto _ : state) {
    auto inv = discover::discover(opts);
    if (!inv) {
      state.SkipWithError(inv.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(inv);
  }
}
BENCHMARK_CAPTURE(BM_Discover, proc, discover::Mode::proc)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Discover, nvml, discover::Mode::nvml)->Unit(benchmark::kMicrosecond);

void BM_BuildAndWriteSpec(benchmark::State& state) {
  const auto inv = discover::discover(options(discover::Mode::nvml)).value();
  cdi::BuildOptions build;
  build.hook_path = "/usr/bin/gpuctk";
  for (auto _ : state) {
    auto spec = cdi::build_spec(inv, build);
    benchmark::DoNotOptimize(cdi::write_spec(*spec, cdi::Format::yaml));
  }
}
BENCHMARK(BM_BuildAndWriteSpec)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
