#pragma once
// gpuctk-exporter's collector: one thread that reads every GPU and MIG device through NVML at each
// interval, attributes them to pods (with -k), renders the exposition and publishes it; between
// collections it waits for NVML's Xid events and records the last Xid of each GPU. A scrape only takes
// the published text (Published::metrics): it never waits for NVML.
//
// NVML lost (opening it, its report or a sample fails, or its event wait does): the session is closed,
// /health says why, and /metrics keeps serving the exporter's own metrics only (never stale GPU values).
// The next collection opens NVML again, so a driver coming back recovers without a restart.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "discover/nvml.hpp"
#include "metrics/attribution.hpp"
#include "metrics/counters.hpp"
#include "metrics/exposition.hpp"
#include "util/error.hpp"

namespace gpuctk::metrics {

// What a collection asks of an open NVML: discover::Nvml in the exporter (open_nvml_session), a fake in
// the tests.
class NvmlSession {
 public:
  virtual ~NvmlSession() = default;
  [[nodiscard]] virtual Result<discover::NvmlReport> report() const = 0;
  [[nodiscard]] virtual Result<discover::NvmlSample> sample(uint32_t gpu_index,
                                                            std::optional<uint32_t> mig_index) const = 0;
  // Registers GPU `uuid` for Xid critical errors: false when it cannot have them. An error is NVML's
  // refusal to make or fill the event set; the collector then waits without events.
  virtual Result<bool> watch_xids(const std::string& uuid) = 0;
  // The next event of the watched GPUs, waiting at most `timeout`; nullopt when none came in time. An
  // error means NVML can no longer serve.
  virtual Result<std::optional<discover::NvmlEvent>> wait(std::chrono::milliseconds timeout) = 0;
};

// Opens NVML (each call a new session); errors say why it cannot serve.
using OpenNvml = std::function<Result<std::unique_ptr<NvmlSession>>()>;
// The kubelet's pod-resources List (list_pod_resources with the socket and timeout bound).
using ListPods = std::function<Result<std::vector<ContainerDevices>>()>;
// Where warnings go: one line each, without a newline (stderr in the exporter).
using LogLine = std::function<void(const std::string&)>;

// The NVML library `library_path` (an absolute path inside the driver root), as a session.
Result<std::unique_ptr<NvmlSession>> open_nvml_session(const std::string& library_path);

struct CollectorOptions {
  std::vector<Counter> counters;
  std::string hostname;  // "" with --no-hostname
  std::chrono::milliseconds interval{30000};
  ListPods list_pods;  // empty: no pod labels (no -k)
};

// What the HTTP side serves: the last exposition and NVML's health, swapped under a mutex.
class Published {
 public:
  struct Snapshot {
    std::shared_ptr<const std::string> metrics;  // never null
    std::string unhealthy;                       // "" when NVML answered the last collection; else why
  };
  Published();
  [[nodiscard]] Snapshot get() const;
  void set(std::shared_ptr<const std::string> metrics, std::string unhealthy);

 private:
  mutable std::mutex m_mutex;
  Snapshot m_snapshot;
};

class Collector {
 public:
  Collector(CollectorOptions options, OpenNvml open, LogLine log, Published& published);

  // One collection: NVML opened if it is not, every device read, pods attributed, the result published.
  void collect();
  // Waits for Xid events until `deadline` (steady clock) or stop(), recording each Xid; a failing wait
  // closes NVML as collect() does. Without an open NVML or a watched GPU it only waits.
  void wait_events(std::chrono::steady_clock::time_point deadline);
  // collect() and wait_events() in turn, every interval, until stop().
  void run();
  // Ends run() (at the latest after the NVML wait in progress, at most k_max_event_wait); thread-safe.
  void stop();

  // The longest single NVML event wait: NVML's wait cannot be interrupted, so a stop waits this long.
  static constexpr std::chrono::milliseconds k_max_event_wait{500};

 private:
  Result<Collection> read_devices();
  void watch_new_gpus(const discover::NvmlReport& report);
  void attribute_pods(Collection& collection);
  void lose_nvml(const std::string& why);
  void publish(const Collection* collection);
  void warn_once(std::string& last, const std::string& line);
  bool stopped();
  void sleep_until(std::chrono::steady_clock::time_point deadline);

  CollectorOptions m_options;
  OpenNvml m_open;
  LogLine m_log;
  Published& m_published;
  std::unique_ptr<NvmlSession> m_session;
  std::map<std::string, bool, std::less<>> m_watched;       // GPU UUID -> registered for Xids (tried once)
  std::map<std::string, uint64_t, std::less<>> m_last_xid;  // GPU UUID -> last Xid seen
  std::string m_unhealthy;                                  // why NVML is lost; "" when it answers
  uint64_t m_collections = 0;
  uint64_t m_errors = 0;
  std::string m_last_pod_warning;
  std::string m_last_watch_warning;
  std::vector<std::string> m_last_attribution_warnings;
  std::chrono::steady_clock::duration m_last_took{};
  size_t m_last_size = 0;  // the last exposition's size, reserved for the next one
  std::mutex m_stop_mutex;
  std::condition_variable m_stop_cv;
  bool m_stop = false;
};

// The exporter's own metrics (gpuctk's names), appended after the GPUs' exposition.
void render_own_metrics(bool nvml_up, uint64_t collections, uint64_t errors, double last_duration_seconds,
                        std::string& out);

// NVML's spelling of a bus id, as dcgm-exporter labels it: "0000:b7:00.0" -> "00000000:B7:00.0".
std::string nvml_bus_id(std::string_view canonical);

}  // namespace gpuctk::metrics
