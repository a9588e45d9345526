#include "metrics/collector.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <sstream>
#include <utility>

#include "discover/nvml_abi.h"

namespace gpuctk::metrics {
namespace {

using discover::NvmlEvent;
using discover::NvmlSample;

// What the fake NVML answers; a test changes it between collections.
struct FakeNvml {
  discover::NvmlReport report;
  std::map<std::pair<uint32_t, std::optional<uint32_t>>, NvmlSample> samples;
  std::string open_error, report_error, sample_error, watch_error, wait_error;
  std::deque<NvmlEvent> events;
  std::vector<std::string> watched;
  std::vector<std::pair<uint32_t, std::optional<uint32_t>>> sampled;
  int opened = 0;
  Collector* collector = nullptr;  // stopped when a wait finds no event left: wait_events returns then
};

class FakeSession final : public NvmlSession {
 public:
  explicit FakeSession(FakeNvml& nvml) : m_nvml(nvml) {}
  [[nodiscard]] Result<discover::NvmlReport> report() const override {
    if (!m_nvml.report_error.empty()) {
      return fail(m_nvml.report_error);
    }
    return m_nvml.report;
  }
  [[nodiscard]] Result<NvmlSample> sample(uint32_t gpu, std::optional<uint32_t> mig) const override {
    m_nvml.sampled.emplace_back(gpu, mig);
    if (!m_nvml.sample_error.empty()) {
      return fail(m_nvml.sample_error);
    }
    return m_nvml.samples[{gpu, mig}];
  }
  Result<bool> watch_xids(const std::string& uuid) override {
    if (!m_nvml.watch_error.empty()) {
      return fail(m_nvml.watch_error);
    }
    m_nvml.watched.push_back(uuid);
    return true;
  }
  Result<std::optional<NvmlEvent>> wait(std::chrono::milliseconds /*timeout*/) override {
    if (!m_nvml.wait_error.empty()) {
      m_nvml.collector->stop();  // else the wait for the next collection would last the test's hour
      return fail(m_nvml.wait_error);
    }
    if (m_nvml.events.empty()) {
      m_nvml.collector->stop();
      return std::optional<NvmlEvent>{};
    }
    auto event = m_nvml.events.front();
    m_nvml.events.pop_front();
    return std::optional<NvmlEvent>{event};
  }

 private:
  FakeNvml& m_nvml;
};

discover::NvmlGpu gpu(uint32_t index, std::string uuid) {
  discover::NvmlGpu out;
  out.index = index;
  out.minor = index;
  out.uuid = std::move(uuid);
  out.name = "NVIDIA A100-SXM4-40GB";
  out.bus_id = "0000:0" + std::to_string(index) + ":00.0";
  return out;
}

NvmlSample temperature(uint32_t celsius) {
  NvmlSample sample;
  sample.gpu_temperature_c = celsius;
  return sample;
}

// The value of the line of `metric` whose labels hold `label` (`UUID="GPU-a"`), "" when there is none.
std::string value_of(const std::string& text, const std::string& metric, const std::string& label) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(metric + "{") && line.find(label) != std::string::npos) {
      return line.substr(line.rfind(' ') + 1);
    }
  }
  return "";
}

std::string own_metric(const std::string& text, const std::string& metric) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(metric + " ")) {
      return line.substr(metric.size() + 1);
    }
  }
  return "";
}

class CollectorTest : public ::testing::Test {
 protected:
  CollectorTest() {
    nvml.report.driver_version = "550.54.15";
    nvml.report.gpus = {gpu(0, "GPU-a"), gpu(1, "GPU-b")};
    discover::NvmlMig mig;
    mig.index = 0;
    mig.gi = 3;
    mig.uuid = "MIG-b0";
    mig.profile = "3g.20gb";
    nvml.report.gpus[1].mig_enabled = true;
    nvml.report.gpus[1].migs = {mig};
    nvml.samples[{0, std::nullopt}] = temperature(40);
    nvml.samples[{1, std::nullopt}] = temperature(41);
    nvml.collector = &collector;
  }

  CollectorOptions options() {
    CollectorOptions out;
    auto counters = parse_counters(
        "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
        "DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.\n",
        "test");
    EXPECT_TRUE(counters) << counters.error().message;
    out.counters = counters->counters;
    out.hostname = "node1";
    out.list_pods = [this]() -> Result<std::vector<ContainerDevices>> {
      if (!pods_error.empty()) {
        return fail(pods_error);
      }
      return pods;
    };
    return out;
  }

  std::string metrics() const { return *published.get().metrics; }

  FakeNvml nvml;
  std::vector<ContainerDevices> pods;
  std::string pods_error;
  std::vector<std::string> logged;
  Published published;
  Collector collector{options(),
                      [this]() -> Result<std::unique_ptr<NvmlSession>> {
                        ++nvml.opened;
                        if (!nvml.open_error.empty()) {
                          return fail(nvml.open_error);
                        }
                        return std::unique_ptr<NvmlSession>(std::make_unique<FakeSession>(nvml));
                      },
                      [this](const std::string& line) { logged.push_back(line); }, published};
};

TEST_F(CollectorTest, NothingIsPublishedBeforeTheFirstCollection) {
  EXPECT_EQ(metrics(), "");
  EXPECT_EQ(published.get().unhealthy, "no collection yet");
}

TEST_F(CollectorTest, SamplesEveryGpuAndMigDevice) {
  collector.collect();
  using Sampled = std::vector<std::pair<uint32_t, std::optional<uint32_t>>>;
  EXPECT_EQ(nvml.sampled, (Sampled{{0, std::nullopt}, {1, std::nullopt}, {1, 0U}}));
  const auto text = metrics();
  EXPECT_EQ(value_of(text, "DCGM_FI_DEV_GPU_TEMP", "UUID=\"GPU-a\""), "40") << text;
  EXPECT_EQ(value_of(text, "DCGM_FI_DEV_GPU_TEMP", "pci_bus_id=\"00000000:01:00.0\""), "41") << text;
  EXPECT_EQ(own_metric(text, "gpuctk_exporter_nvml_up"), "1");
  EXPECT_EQ(own_metric(text, "gpuctk_exporter_collections_total"), "1");
  EXPECT_EQ(own_metric(text, "gpuctk_exporter_collection_errors_total"), "0");
  EXPECT_NE(own_metric(text, "gpuctk_exporter_last_collection_duration_seconds"), "");
  EXPECT_EQ(published.get().unhealthy, "");
  EXPECT_EQ(nvml.opened, 1);
  EXPECT_EQ(nvml.watched, (std::vector<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_EQ(logged, std::vector<std::string>{});
}

TEST_F(CollectorTest, EachCollectionReadsAgainOnTheSameSession) {
  collector.collect();
  nvml.samples[{0, std::nullopt}] = temperature(55);
  collector.collect();
  EXPECT_EQ(value_of(metrics(), "DCGM_FI_DEV_GPU_TEMP", "UUID=\"GPU-a\""), "55");
  EXPECT_EQ(own_metric(metrics(), "gpuctk_exporter_collections_total"), "2");
  EXPECT_EQ(nvml.opened, 1);
  EXPECT_EQ(nvml.watched.size(), 2U);  // each GPU registered once
}

TEST_F(CollectorTest, LostNvmlLeavesOnlyTheExportersOwnMetrics) {
  collector.collect();
  nvml.sample_error = "nvml: GPU 1: nvmlDeviceGetPowerUsage: GPU is lost";
  collector.collect();
  collector.collect();
  const auto text = metrics();
  EXPECT_EQ(text.find("DCGM_"), std::string::npos) << text;
  EXPECT_EQ(own_metric(text, "gpuctk_exporter_nvml_up"), "0");
  EXPECT_EQ(own_metric(text, "gpuctk_exporter_collections_total"), "3");
  EXPECT_EQ(own_metric(text, "gpuctk_exporter_collection_errors_total"), "2");
  EXPECT_EQ(published.get().unhealthy, "nvml: GPU 1: nvmlDeviceGetPowerUsage: GPU is lost");
  // Once, though two collections failed alike; each failure opened NVML again.
  EXPECT_EQ(
      logged,
      std::vector<std::string>{
          "nvml: GPU 1: nvmlDeviceGetPowerUsage: GPU is lost; GPU metrics left out until NVML answers"});
  EXPECT_EQ(nvml.opened, 2);
}

TEST_F(CollectorTest, NvmlComingBackRecovers) {
  nvml.open_error = "nvml: nvmlInit_v2: Driver Not Loaded";
  collector.collect();
  EXPECT_EQ(published.get().unhealthy, "nvml: nvmlInit_v2: Driver Not Loaded");
  nvml.open_error.clear();
  collector.collect();
  EXPECT_EQ(published.get().unhealthy, "");
  EXPECT_EQ(value_of(metrics(), "DCGM_FI_DEV_GPU_TEMP", "UUID=\"GPU-b\""), "41");
  EXPECT_EQ(own_metric(metrics(), "gpuctk_exporter_nvml_up"), "1");
  EXPECT_EQ(logged, (std::vector<std::string>{
                        "nvml: nvmlInit_v2: Driver Not Loaded; GPU metrics left out until NVML answers",
                        "NVML answers again"}));
}

TEST_F(CollectorTest, AFailingReportLosesNvml) {
  nvml.report_error = "nvml: GPU 0: nvmlDeviceGetUUID: GPU is lost";
  collector.collect();
  EXPECT_EQ(published.get().unhealthy, "nvml: GPU 0: nvmlDeviceGetUUID: GPU is lost");
  EXPECT_EQ(nvml.sampled.size(), 0U);
}

TEST_F(CollectorTest, TheLastXidOfEachGpuIsReported) {
  collector.collect();
  nvml.events = {NvmlEvent{"GPU-b", nvmlEventTypeXidCriticalError, 13, {}, {}},
                 NvmlEvent{"GPU-b", nvmlEventTypeXidCriticalError, 79, {}, {}}};
  collector.wait_events(std::chrono::steady_clock::now() + std::chrono::hours(1));
  collector.collect();
  EXPECT_EQ(value_of(metrics(), "DCGM_FI_DEV_XID_ERRORS", "UUID=\"GPU-b\""), "79") << metrics();
  EXPECT_EQ(value_of(metrics(), "DCGM_FI_DEV_XID_ERRORS", "UUID=\"GPU-a\""), "") << metrics();
}

TEST_F(CollectorTest, AFailingEventWaitLosesNvmlAtOnce) {
  collector.collect();
  nvml.wait_error = "nvml: nvmlEventSetWait_v2: GPU is lost";
  collector.wait_events(std::chrono::steady_clock::now() + std::chrono::hours(1));
  EXPECT_EQ(published.get().unhealthy, "nvml: nvmlEventSetWait_v2: GPU is lost");
  EXPECT_EQ(own_metric(metrics(), "gpuctk_exporter_nvml_up"), "0");
}

// A library without the event calls refuses each GPU alike: one line, not one per GPU.
TEST_F(CollectorTest, GpusThatCannotBeWatchedAreOneWarning) {
  nvml.watch_error = "nvml: /lib/libnvidia-ml.so.1 lacks nvmlEventSetCreate (health checks need them)";
  collector.collect();
  collector.collect();
  EXPECT_EQ(logged, std::vector<std::string>{"nvml: /lib/libnvidia-ml.so.1 lacks nvmlEventSetCreate (health "
                                             "checks need them); its Xid errors are not watched"});
  EXPECT_EQ(published.get().unhealthy, "");
  EXPECT_EQ(value_of(metrics(), "DCGM_FI_DEV_GPU_TEMP", "UUID=\"GPU-a\""), "40");
}

TEST_F(CollectorTest, PodResourcesFailingIsOneWarningPerChange) {
  pods_error = "pod-resources: /x.sock: no such socket";
  collector.collect();
  collector.collect();
  pods_error = "pod-resources: List: DEADLINE_EXCEEDED: Deadline Exceeded";
  collector.collect();
  EXPECT_EQ(logged,
            (std::vector<std::string>{
                "pod-resources: /x.sock: no such socket; metrics without pod labels",
                "pod-resources: List: DEADLINE_EXCEEDED: Deadline Exceeded; metrics without pod labels"}));
  EXPECT_EQ(published.get().unhealthy, "");
  EXPECT_EQ(value_of(metrics(), "DCGM_FI_DEV_GPU_TEMP", "UUID=\"GPU-a\""), "40");
}

TEST_F(CollectorTest, RunCollectsUntilStopped) {
  collector.run();  // the fake's first wait finds no event and stops it
  EXPECT_EQ(own_metric(metrics(), "gpuctk_exporter_collections_total"), "1");
}

TEST(NvmlBusId, IsNvmlsSpelling) {
  EXPECT_EQ(nvml_bus_id("0000:b7:00.0"), "00000000:B7:00.0");
  EXPECT_EQ(nvml_bus_id("10000:01:00.0"), "00010000:01:00.0");
}

}  // namespace
}  // namespace gpuctk::metrics
