// Writes the exposition of a full collection to stdout, for tests/metrics/promtool.sh: 8 GPUs in MIG mode
// with 7 MIG devices each, every field gpuctk-exporter reads, pods holding devices, and names that need
// escaping (quotes, newlines, backslashes, bytes that are not UTF-8).
#include <cstdio>
#include <string>

#include "metrics/attribution.hpp"
#include "metrics/sample_collection.hpp"

int main() {
  using namespace gpuctk::metrics;
  // Every field, as a counters file names them.
  std::string file;
  for (const auto& field : all_fields()) {
    const char* type = field.type == MetricType::label     ? "label"
                       : field.type == MetricType::counter ? "counter"
                                                           : "gauge";
    file += std::string(field.name) + ", " + type + ", " + std::string(field.name) + " \\ help\n";
  }
  const auto counters = parse_counters(file, "all fields");
  if (!counters || !counters->warnings.empty()) {
    std::fputs("exposition_sample: the counters of every field do not parse cleanly\n", stderr);
    return 1;
  }
  Collection collection = test::large_collection();
  collection.devices[0].last_xid = 79;
  collection.devices[0].sample.retired_pages_sbe = 2;
  collection.devices[0].sample.retired_pages_dbe = 0;
  collection.devices[0].sample.retired_pages_pending = false;
  collection.devices[0].sample.row_remap_pending = true;
  const auto attribution = attribute({
      ContainerDevices{"we\"ird\npod\\", "ml", "main", "nvidia.com/gpu", {collection.devices[0].uuid}},
      ContainerDevices{
          "bytes-\xFF\xFE", "ml", "c\"2", "nvidia.com/gpu", {collection.devices[0].uuid + "::1"}},
      ContainerDevices{
          "infer", "serving", "server", "nvidia.com/mig-1g.5gb", {collection.devices[1].mig_uuid}},
  });
  apply(attribution, collection);
  std::string out;
  render(counters->counters, collection, out);
  return std::fwrite(out.data(), 1, out.size(), stdout) == out.size() ? 0 : 1;
}
