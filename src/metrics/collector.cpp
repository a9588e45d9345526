#include "metrics/collector.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "discover/nvml_abi.h"

namespace gpuctk::metrics {
namespace {

using Clock = std::chrono::steady_clock;

// discover::Nvml as the collector's session; the event set is made on the first watched GPU.
class LibrarySession final : public NvmlSession {
 public:
  explicit LibrarySession(discover::Nvml nvml) : m_nvml(std::move(nvml)) {}

  [[nodiscard]] Result<discover::NvmlReport> report() const override { return m_nvml.report(); }

  [[nodiscard]] Result<discover::NvmlSample> sample(uint32_t gpu_index,
                                                    std::optional<uint32_t> mig_index) const override {
    return m_nvml.sample(gpu_index, mig_index);
  }

  Result<bool> watch_xids(const std::string& uuid) override {
    if (!m_events) {
      GPUCTK_TRY_ASSIGN(auto made, m_nvml.events());
      m_events.emplace(std::move(made));
    }
    return m_events->add(uuid, nvmlEventTypeXidCriticalError);
  }

  Result<std::optional<discover::NvmlEvent>> wait(std::chrono::milliseconds timeout) override {
    if (!m_events) {
      return std::optional<discover::NvmlEvent>{};
    }
    return m_events->wait(timeout);
  }

 private:
  discover::Nvml m_nvml;
  // Declared after m_nvml, so freed before it (the set needs its library).
  std::optional<discover::NvmlEvents> m_events;
};

// The labels every reading of `gpu` shares.
DeviceReading gpu_reading(const discover::NvmlGpu& gpu) {
  DeviceReading reading;
  reading.gpu = gpu.index;
  reading.uuid = gpu.uuid;
  reading.pci_bus_id = nvml_bus_id(gpu.bus_id);
  reading.device = "nvidia" + std::to_string(gpu.minor);
  reading.model_name = gpu.name;
  return reading;
}

DeviceReading mig_reading(const DeviceReading& parent, const discover::NvmlMig& mig) {
  DeviceReading reading = parent;
  reading.gpu_instance_id = mig.gi;
  reading.gpu_instance_profile = mig.profile;
  reading.mig_uuid = mig.uuid;
  reading.last_xid.reset();  // an Xid is the GPU's: dcgm-exporter reports it on the GPU
  return reading;
}

void append_metric(std::string& out, std::string_view name, std::string_view type, std::string_view help,
                   std::string_view value) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  out.append(name).append(" ").append(value).append("\n");
}

}  // namespace

Result<std::unique_ptr<NvmlSession>> open_nvml_session(const std::string& library_path) {
  GPUCTK_TRY_ASSIGN(auto nvml, discover::Nvml::open(library_path));
  return std::unique_ptr<NvmlSession>(std::make_unique<LibrarySession>(std::move(nvml)));
}

std::string nvml_bus_id(std::string_view canonical) {
  const auto colon = canonical.find(':');  // npos (no domain) pads nothing
  std::string out;
  if (colon < 8) {
    out.assign(8 - colon, '0');
  }
  for (const char c : canonical) {
    out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

void render_own_metrics(bool nvml_up, uint64_t collections, uint64_t errors, double last_duration_seconds,
                        std::string& out) {
  char duration[32];
  std::snprintf(duration, sizeof duration, "%.6f", last_duration_seconds);
  append_metric(out, "gpuctk_exporter_nvml_up", "gauge",
                "Whether NVML answered the last collection (1) or not (0).", nvml_up ? "1" : "0");
  append_metric(out, "gpuctk_exporter_collections_total", "counter",
                "Collections since the exporter started.", std::to_string(collections));
  append_metric(out, "gpuctk_exporter_collection_errors_total", "counter",
                "Collections and event waits that found NVML unable to serve.", std::to_string(errors));
  append_metric(out, "gpuctk_exporter_last_collection_duration_seconds", "gauge",
                "How long the last collection took, in seconds.", duration);
}

Published::Published() : m_snapshot{std::make_shared<const std::string>(), "no collection yet"} {}

Published::Snapshot Published::get() const {
  const std::lock_guard lock(m_mutex);
  return m_snapshot;
}

void Published::set(std::shared_ptr<const std::string> metrics, std::string unhealthy) {
  Snapshot next{std::move(metrics), std::move(unhealthy)};
  const std::lock_guard lock(m_mutex);
  std::swap(m_snapshot, next);  // the old text is freed after the lock, by `next`
}

Collector::Collector(CollectorOptions options, OpenNvml open, LogLine log, Published& published)
    : m_options(std::move(options)), m_open(std::move(open)), m_log(std::move(log)), m_published(published) {}

void Collector::collect() {
  const auto start = Clock::now();
  ++m_collections;
  auto collection = read_devices();
  if (!collection) {
    ++m_errors;
    m_last_took = Clock::now() - start;
    lose_nvml(collection.error().message);
    return;
  }
  if (!m_unhealthy.empty()) {
    m_log("NVML answers again");
    m_unhealthy.clear();
  }
  if (m_options.list_pods) {
    attribute_pods(*collection);
  }
  m_last_took = Clock::now() - start;
  publish(&*collection);
}

Result<Collection> Collector::read_devices() {
  if (!m_session) {
    GPUCTK_TRY_ASSIGN(m_session, m_open());
    m_watched.clear();
  }
  GPUCTK_TRY_ASSIGN(const auto report, m_session->report());
  Collection collection;
  collection.hostname = m_options.hostname;
  collection.driver_version = report.driver_version;
  for (const auto& gpu : report.gpus) {
    auto reading = gpu_reading(gpu);
    if (const auto xid = m_last_xid.find(gpu.uuid); xid != m_last_xid.end()) {
      reading.last_xid = xid->second;
    }
    GPUCTK_TRY_ASSIGN(reading.sample, m_session->sample(gpu.index, std::nullopt));
    collection.devices.push_back(reading);
    for (const auto& mig : gpu.migs) {
      auto device = mig_reading(reading, mig);
      GPUCTK_TRY_ASSIGN(device.sample, m_session->sample(gpu.index, mig.index));
      collection.devices.push_back(std::move(device));
    }
  }
  watch_new_gpus(report);
  return collection;
}

// Registers the GPUs not seen before for Xids (MIG reconfiguration leaves the GPUs as they are; a new
// session starts over). A refusal leaves the GPU unwatched, its metrics served: one warning per distinct
// message (a library without the event calls refuses every GPU alike; a GPU's own refusal names it).
void Collector::watch_new_gpus(const discover::NvmlReport& report) {
  for (const auto& gpu : report.gpus) {
    if (m_watched.contains(gpu.uuid)) {
      continue;
    }
    auto watched = m_session->watch_xids(gpu.uuid);
    if (!watched) {
      warn_once(m_last_watch_warning, watched.error().message + "; its Xid errors are not watched");
    }
    m_watched[gpu.uuid] = watched && *watched;
  }
}

void Collector::attribute_pods(Collection& collection) {
  auto listed = m_options.list_pods();
  if (!listed) {
    warn_once(m_last_pod_warning, listed.error().message + "; metrics without pod labels");
    return;
  }
  m_last_pod_warning.clear();
  auto attribution = attribute(*listed);
  if (attribution.warnings != m_last_attribution_warnings) {
    for (const auto& warning : attribution.warnings) {
      m_log(warning);
    }
    m_last_attribution_warnings = std::move(attribution.warnings);
  }
  apply(attribution, collection);
}

void Collector::lose_nvml(const std::string& why) {
  if (why != m_unhealthy) {
    m_log(why + "; GPU metrics left out until NVML answers");
  }
  m_unhealthy = why;
  m_session.reset();
  m_watched.clear();
  publish(nullptr);
}

void Collector::publish(const Collection* collection) {
  auto text = std::make_shared<std::string>();
  text->reserve(m_last_size);
  if (collection != nullptr) {
    render(m_options.counters, *collection, *text);
  }
  const auto seconds = std::chrono::duration<double>(m_last_took).count();
  render_own_metrics(collection != nullptr, m_collections, m_errors, seconds, *text);
  m_last_size = text->size();
  m_published.set(std::move(text), m_unhealthy);
}

void Collector::warn_once(std::string& last, const std::string& line) {
  if (line != last) {
    m_log(line);
    last = line;
  }
}

void Collector::wait_events(Clock::time_point deadline) {
  while (true) {
    const auto now = Clock::now();
    if (stopped() || now >= deadline) {
      return;
    }
    const bool watching = m_session && std::ranges::any_of(m_watched, [](const auto& w) { return w.second; });
    if (!watching) {
      sleep_until(deadline);
      return;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    auto event = m_session->wait(std::min(left, k_max_event_wait));
    if (!event) {
      ++m_errors;
      lose_nvml(event.error().message);
      continue;
    }
    if (*event && ((*event)->type & nvmlEventTypeXidCriticalError) != 0) {
      m_last_xid[(*event)->uuid] = (*event)->data;
    }
  }
}

void Collector::run() {
  auto next = Clock::now();
  while (!stopped()) {
    collect();
    next += m_options.interval;
    // A collection longer than the interval starts the next one at once, not a burst of catch-ups.
    next = std::max(next, Clock::now());
    wait_events(next);
  }
}

void Collector::stop() {
  {
    const std::lock_guard lock(m_stop_mutex);
    m_stop = true;
  }
  m_stop_cv.notify_all();
}

bool Collector::stopped() {
  const std::lock_guard lock(m_stop_mutex);
  return m_stop;
}

void Collector::sleep_until(Clock::time_point deadline) {
  std::unique_lock lock(m_stop_mutex);
  m_stop_cv.wait_until(lock, deadline, [this] { return m_stop; });
}

}  // namespace gpuctk::metrics
