// pod_resources_rss SOCKET [CALLS [INTERVAL_MS]]: what the pod-resources client costs gpuctk-exporter's
// resident set. Calls list_pod_resources (src/metrics/pod_resources) on SOCKET CALLS times (default 1000),
// one every INTERVAL_MS (default 1000, the exporter's pace at most), and does nothing else; prints VmRSS and
// VmHWM (/proc/self/status) after the first call, every 100th and the last, with the entries and errors seen:
//   "call 100: VmRSS 5120 kB  VmHWM 5200 kB  entries 8  errors 0"
// Measures, never asserts (bench/README.md has the figures). Exit 2 on bad arguments.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "metrics/pod_resources.hpp"
#include "util/strings.hpp"

namespace {

// The value of `key` ("VmRSS:") in /proc/self/status, as written ("5120 kB").
std::string status_field(const std::string& key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with(key)) {
      return std::string(gpuctk::trim(std::string_view(line).substr(key.size())));
    }
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: pod_resources_rss SOCKET [CALLS [INTERVAL_MS]]\n");
    return 2;
  }
  const std::string socket = argv[1];
  const auto calls = argc > 2 ? gpuctk::parse_u32(argv[2]) : std::optional<uint32_t>{1000};
  const auto interval = argc > 3 ? gpuctk::parse_u32(argv[3]) : std::optional<uint32_t>{1000};
  if (!calls || !interval || *calls == 0) {
    std::fprintf(stderr, "pod_resources_rss: CALLS and INTERVAL_MS are numbers, CALLS at least 1\n");
    return 2;
  }
  size_t entries = 0;
  size_t errors = 0;
  for (uint32_t call = 1; call <= *calls; ++call) {
    const auto listed = gpuctk::metrics::list_pod_resources(socket, std::chrono::seconds(10));
    entries = listed ? listed->size() : 0;
    errors += listed ? 0 : 1;
    if (!listed && errors == 1) {
      std::fprintf(stderr, "pod_resources_rss: %s\n", listed.error().message.c_str());
    }
    if (call == 1 || call % 100 == 0 || call == *calls) {
      std::printf("call %u: VmRSS %s  VmHWM %s  entries %zu  errors %zu\n", call,
                  status_field("VmRSS:").c_str(), status_field("VmHWM:").c_str(), entries, errors);
      std::fflush(stdout);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(*interval));
  }
  return 0;
}
