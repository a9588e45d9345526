// gpuctk-exporter: GPU metrics for Prometheus under dcgm-exporter's names, read from NVML
// (collector.hpp), served over HTTP (http_server.hpp). The command line is dcgm-exporter's, for the
// options gpuctk-exporter has.
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "discover/discover.hpp"
#include "metrics/collector.hpp"
#include "metrics/counters.hpp"
#include "metrics/http_server.hpp"
#include "metrics/listen_address.hpp"
#include "metrics/pod_resources.hpp"
#include "metrics/web_config.hpp"
#include "util/file.hpp"
#include "util/stop_signals.hpp"
#include "util/strings.hpp"

namespace {

using namespace gpuctk;
using namespace gpuctk::metrics;

// A counters file larger than parse_counters takes is refused by it; one byte more is read so it can say so.
constexpr size_t k_max_counters_file = (size_t{1} << 20) + 1;
// glibc's malloc arenas: one, as the device plugin has. Each thread that allocates (the collector, the
// HTTP thread, gRPC's when -k) would otherwise keep an arena of its own, resident; the exporter allocates
// one exposition per collection, so one lock costs nothing.
constexpr int k_malloc_arenas = 1;
// How long one pod-resources List may take: dcgm-exporter's timeout.
constexpr std::chrono::seconds k_pod_resources_timeout{10};

struct Options {
  std::string collectors;  // "" : the built-in set
  std::string address = ":9400";
  unsigned interval_ms = 30000;
  bool kubernetes = false;
  std::string pod_resources_socket = k_pod_resources_socket;
  std::string web_config;
  bool no_hostname = false;
  std::string driver_root = "/";
};

void log_line(const std::string& line) {
  std::fprintf(stderr, "gpuctk-exporter: %s\n", escape_for_log(line).c_str());
}

int fail_line(const std::string& message) {
  std::fprintf(stderr, "gpuctk-exporter: error: %s\n", escape_for_log(message).c_str());
  return 1;
}

// The Hostname label: the node's name in a pod (the DaemonSet sets NODE_NAME), else this machine's.
std::string hostname() {
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != '\0') {
    return node;
  }
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) {
    return "";
  }
  return name;
}

Result<std::vector<Counter>> load_counters(const std::string& path) {
  if (path.empty()) {
    return default_counters().counters;
  }
  GPUCTK_TRY_ASSIGN(const auto text, read_file(path, k_max_counters_file));
  GPUCTK_TRY_ASSIGN(auto parsed, parse_counters(text, path));
  for (const auto& warning : parsed.warnings) {
    log_line(warning);
  }
  return std::move(parsed.counters);
}

CollectorOptions collector_options(const Options& options, std::vector<Counter> counters) {
  CollectorOptions out;
  out.counters = std::move(counters);
  out.hostname = options.no_hostname ? "" : hostname();
  out.interval = std::chrono::milliseconds(options.interval_ms);
  if (options.kubernetes) {
    out.list_pods = [socket = options.pod_resources_socket] {
      return list_pod_resources(socket, k_pod_resources_timeout);
    };
  }
  return out;
}

// Waits for SIGTERM or SIGINT (blocked in every thread, taken here only).
Result<void> wait_for_signal(const sigset_t& stop) {
  while (true) {
    GPUCTK_TRY_ASSIGN(const bool came, wait_for_stop(stop, 3600));
    if (came) {
      return {};
    }
  }
}

Result<void> serve(const Options& options) {
  // Before any thread starts, so that each inherits the mask and only wait_for_signal takes them.
  GPUCTK_TRY_ASSIGN(const auto stop, block_stop_signals());
  GPUCTK_TRY_ASSIGN(auto counters, load_counters(options.collectors));
  WebConfig web;
  if (!options.web_config.empty()) {
    GPUCTK_TRY_ASSIGN(web, load_web_config(options.web_config));
  }
  GPUCTK_TRY_ASSIGN(const auto address, parse_listen_address(options.address));
  GPUCTK_TRY_ASSIGN(auto listener, listen_on(address));
  const std::string shown = listener.shown;

  Published published;
  OpenNvml open = [root = options.driver_root]() -> Result<std::unique_ptr<NvmlSession>> {
    GPUCTK_TRY_ASSIGN(const auto library, discover::find_nvml_library(root));
    return open_nvml_session(library);
  };
  Collector collector(collector_options(options, std::move(counters)), std::move(open), log_line, published);
  GPUCTK_TRY_ASSIGN(auto server, HttpServer::start(std::move(listener), web, published));
  log_line("listening on " + shown);
  std::thread collecting([&collector] { collector.run(); });
  const auto waited = wait_for_signal(stop);
  server.reset();
  collector.stop();
  collecting.join();
  return waited;
}

void add_options(CLI::App& app, Options& options) {
  app.add_option("-f,--collectors", options.collectors,
                 "the counters file (dcgm-exporter's format); default: the built-in set");
  app.add_option("-a,--address", options.address, "the address to listen on: host:port, [v6]:port, :port")
      ->capture_default_str();
  app.add_option("-c,--collect-interval", options.interval_ms, "milliseconds between collections")
      ->capture_default_str()
      ->check(CLI::Range(100U, static_cast<unsigned>(INT_MAX)));
  app.add_flag("-k,--kubernetes", options.kubernetes,
               "label each device with the pod holding it (pod-resources)");
  app.add_option("-p,--pod-resources-kubelet-socket", options.pod_resources_socket,
                 "the kubelet's pod-resources socket")
      ->capture_default_str();
  app.add_option("--web-config-file", options.web_config,
                 "TLS and basic auth (the exporter toolkit's format)");
  app.add_flag("-n,--no-hostname", options.no_hostname, "leave out the Hostname label");
  app.add_option("--driver-root", options.driver_root, "where libnvidia-ml.so.1 is found")
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  ::mallopt(M_ARENA_MAX, k_malloc_arenas);  // before any thread; failure leaves glibc's default
  CLI::App app("gpuctk-exporter: GPU metrics for Prometheus (dcgm-exporter's names), from NVML",
               "gpuctk-exporter");
  app.set_version_flag("--version", "gpuctk-exporter " GPUCTK_VERSION);
  Options options;
  add_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      return app.exit(e);  // --help, --version
    }
    return fail_line(e.what());  // one line, exit 1, as every other error
  }
  if (auto served = serve(options); !served) {
    return fail_line(served.error().message);
  }
  return 0;
}
