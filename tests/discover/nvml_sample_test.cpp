// discover::Nvml::sample (gpuctk-exporter's readings) over materialised fixture hosts, whose mock NVML
// answers from an nvml-telemetry file written beside its nvml-mock.conf (fixtures/mock_nvml/mock_nvml.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "discover/nvml.hpp"
#include "fixtures/builder/hosts.hpp"
#include "fixtures/builder/materialise.hpp"
#include "util/file.hpp"

namespace gpuctk::discover {

// gtest prints a failing NvmlSample field by field ("-": nullopt), not as 320 bytes. Static: another
// test file may want its own.
template <typename T>
static void print_field(std::ostream& os, const char* name, const std::optional<T>& value) {
  os << " " << name << "=";
  if (value) {
    os << +*value;
  } else {
    os << "-";
  }
}

static void PrintTo(const NvmlSample& s, std::ostream* os) {
#define GPUCTK_PRINT(field) print_field(*os, #field, s.field)
  *os << "{";
  GPUCTK_PRINT(sm_clock_mhz);
  GPUCTK_PRINT(memory_clock_mhz);
  GPUCTK_PRINT(gpu_temperature_c);
  GPUCTK_PRINT(memory_temperature_c);
  GPUCTK_PRINT(power_mw);
  GPUCTK_PRINT(energy_mj);
  GPUCTK_PRINT(pcie_tx_kb_per_s);
  GPUCTK_PRINT(pcie_rx_kb_per_s);
  GPUCTK_PRINT(pcie_replays);
  GPUCTK_PRINT(gpu_utilization);
  GPUCTK_PRINT(memory_utilization);
  GPUCTK_PRINT(encoder_utilization);
  GPUCTK_PRINT(decoder_utilization);
  GPUCTK_PRINT(fb_total_bytes);
  GPUCTK_PRINT(fb_used_bytes);
  GPUCTK_PRINT(fb_free_bytes);
  GPUCTK_PRINT(fb_reserved_bytes);
  GPUCTK_PRINT(remapped_rows_correctable);
  GPUCTK_PRINT(remapped_rows_uncorrectable);
  GPUCTK_PRINT(row_remap_pending);
  GPUCTK_PRINT(row_remap_failure);
  GPUCTK_PRINT(nvlink_tx_kib);
  GPUCTK_PRINT(nvlink_rx_kib);
  GPUCTK_PRINT(ecc_sbe_volatile);
  GPUCTK_PRINT(ecc_dbe_volatile);
  GPUCTK_PRINT(ecc_sbe_aggregate);
  GPUCTK_PRINT(ecc_dbe_aggregate);
  GPUCTK_PRINT(retired_pages_sbe);
  GPUCTK_PRINT(retired_pages_dbe);
  GPUCTK_PRINT(retired_pages_pending);
#undef GPUCTK_PRINT
  *os << " }";
}

namespace {

namespace fs = std::filesystem;

// dgx-a100's first GPU and its MIG devices' parent (MIG mode on, a 3g.20gb and a 2g.10gb).
constexpr const char* k_gpu = "GPU-8a01e859-0978-54c5-a95e-eab9512d3cca";
constexpr const char* k_mig_parent = "GPU-278bc4be-6a4d-59a8-813e-a83915f82aa4";
constexpr const char* k_mig = "MIG-c5b0c3e5-75e8-5049-a1a0-1c52f1b739a2";

// Every key of a sample line, each value distinct so a reading taken from the wrong key shows.
std::string full_sample(const std::string& uuid) {
  return "sample\tuuid=" + uuid +
         "\tsm_clock=1410\tmemory_clock=1215\tgpu_temp=41\tmemory_temp=39\tpower_mw=61234"
         "\tenergy_mj=987654321012\tpcie_tx=1100\tpcie_rx=2200\tpcie_replays=3\tgpu_util=97\tmemory_util=45"
         "\tencoder_util=12\tdecoder_util=13\tfb_used=1000000\tfb_free=40000000000\tfb_reserved=500000000"
         "\tremapped_correctable=4\tremapped_uncorrectable=5\tremap_pending=1\tremap_failure=0"
         "\tnvlink_tx_kib=123456789\tnvlink_rx_kib=987654321\tecc_sbe_volatile=6\tecc_dbe_volatile=7"
         "\tecc_sbe_aggregate=8\tecc_dbe_aggregate=9\tretired_sbe=10\tretired_dbe=11\tretired_pending=1\n";
}

NvmlSample full_expected() {
  NvmlSample s;
  s.sm_clock_mhz = 1410;
  s.memory_clock_mhz = 1215;
  s.gpu_temperature_c = 41;
  s.memory_temperature_c = 39;
  s.power_mw = 61234;
  s.energy_mj = 987654321012ULL;
  s.pcie_tx_kb_per_s = 1100;
  s.pcie_rx_kb_per_s = 2200;
  s.pcie_replays = 3;
  s.gpu_utilization = 97;
  s.memory_utilization = 45;
  s.encoder_utilization = 12;
  s.decoder_utilization = 13;
  s.fb_total_bytes = 500000000ULL + 1000000ULL + 40000000000ULL;
  s.fb_used_bytes = 1000000;
  s.fb_free_bytes = 40000000000ULL;
  s.fb_reserved_bytes = 500000000;
  s.remapped_rows_correctable = 4;
  s.remapped_rows_uncorrectable = 5;
  s.row_remap_pending = true;
  s.row_remap_failure = false;
  s.nvlink_tx_kib = 123456789;
  s.nvlink_rx_kib = 987654321;
  s.ecc_sbe_volatile = 6;
  s.ecc_dbe_volatile = 7;
  s.ecc_sbe_aggregate = 8;
  s.ecc_dbe_aggregate = 9;
  s.retired_pages_sbe = 10;
  s.retired_pages_dbe = 11;
  s.retired_pages_pending = true;
  return s;
}

class NvmlSampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("GPUCTK_MOCK_NVML_CONFIG");
    ::unsetenv("GPUCTK_MOCK_NVML_TELEMETRY");
  }

  // Materialises `host`; false (with a failure) when it cannot, or when this build has no mock NVML.
  bool use_host(std::string_view host) {
    auto fixture = fixture::materialise_temp(host);
    if (!fixture) {
      ADD_FAILURE() << fixture.error().message;
      return false;
    }
    m_fixture = std::make_unique<fixture::Fixture>(std::move(*fixture));
    EXPECT_TRUE(m_fixture->host.nvml_is_mock);
    return m_fixture->host.nvml_is_mock;
  }

  std::string library() const { return m_fixture->host.nvml_library; }

  // Replaces the telemetry file by a rename, so the mock sees a new file whatever the clock says.
  void write_telemetry(const std::string& text) const {
    const fs::path dir = fs::path(m_fixture->host.nvml_config).parent_path();
    auto written = write_file_atomic((dir / "nvml-telemetry").string(), text, 0644, Durability::atomic_only);
    ASSERT_TRUE(written) << written.error().message;
  }

  // The NVML index of a GPU and the slot of a MIG device under it, from the report.
  static std::pair<uint32_t, std::optional<uint32_t>> find(const Nvml& nvml, std::string_view uuid) {
    auto report = nvml.report();
    EXPECT_TRUE(report) << report.error().message;
    for (const auto& gpu : report ? report->gpus : std::vector<NvmlGpu>{}) {
      if (gpu.uuid == uuid) {
        return {gpu.index, std::nullopt};
      }
      for (const auto& mig : gpu.migs) {
        if (mig.uuid == uuid) {
          return {gpu.index, mig.index};
        }
      }
    }
    ADD_FAILURE() << uuid << " is not in the report";
    return {UINT32_MAX, std::nullopt};
  }

  std::unique_ptr<fixture::Fixture> m_fixture;
};

TEST_F(NvmlSampleTest, ReadsEveryFieldFromItsCall) {
  ASSERT_TRUE(use_host("dgx-a100"));
  write_telemetry(full_sample(k_gpu));
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  const auto [index, mig] = find(*nvml, k_gpu);
  ASSERT_EQ(mig, std::nullopt);
  auto sample = nvml->sample(index);
  ASSERT_TRUE(sample) << sample.error().message;
  EXPECT_EQ(*sample, full_expected());
}

TEST_F(NvmlSampleTest, KeysLeftOutAndRefusedCallsAreNullopt) {
  ASSERT_TRUE(use_host("dgx-a100"));
  // NO_PERMISSION and INVALID_ARGUMENT (a call, a field value) mean "not on this device", as NOT_SUPPORTED.
  write_telemetry(
      "sample\tuuid=" + std::string(k_gpu) +
      "\tpower_mw=NVML_ERROR_NO_PERMISSION\tgpu_temp=NVML_ERROR_INVALID_ARGUMENT\tmemory_temp=NVML_"
      "ERROR_NOT_FOUND\tnvlink_tx_kib=NVML_ERROR_FUNCTION_NOT_FOUND\tnvlink_rx_kib=5\tsm_clock=900\n");
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  const auto index = find(*nvml, k_gpu).first;
  auto sample = nvml->sample(index);
  ASSERT_TRUE(sample) << sample.error().message;
  NvmlSample expected;
  expected.sm_clock_mhz = 900;
  expected.nvlink_rx_kib = 5;
  EXPECT_EQ(*sample, expected);

  auto other = nvml->sample(find(*nvml, k_mig_parent).first);  // no sample line: nothing at all
  ASSERT_TRUE(other) << other.error().message;
  EXPECT_EQ(*other, NvmlSample{});
}

TEST_F(NvmlSampleTest, ALostGpuIsAnErrorNamingTheDeviceAndTheCall) {
  ASSERT_TRUE(use_host("dgx-a100"));
  write_telemetry("sample\tuuid=" + std::string(k_gpu) + "\tsm_clock=900\tpower_mw=NVML_ERROR_GPU_IS_LOST\n");
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  const auto index = find(*nvml, k_gpu).first;
  auto lost = nvml->sample(index);
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().message,
            "nvml: GPU " + std::to_string(index) + ": nvmlDeviceGetPowerUsage: GPU is lost");

  // A field value's own answer counts the same; UNKNOWN is no "not supported" either.
  write_telemetry("sample\tuuid=" + std::string(k_gpu) + "\tmemory_temp=NVML_ERROR_UNKNOWN\n");
  auto field = nvml->sample(index);
  ASSERT_FALSE(field);
  EXPECT_EQ(field.error().message, "nvml: GPU " + std::to_string(index) +
                                       ": nvmlDeviceGetFieldValues NVML_FI_DEV_MEMORY_TEMP: Unknown Error");

  // The whole GPU gone: its handle lookup fails first.
  write_telemetry("fail\tcalls=NVML_ERROR_GPU_IS_LOST\n");
  auto gone = nvml->sample(index);
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().message,
            "nvml: GPU " + std::to_string(index) + ": nvmlDeviceGetHandleByIndex_v2: GPU is lost");
}

TEST_F(NvmlSampleTest, AMigDeviceGivesItsMemory) {
  ASSERT_TRUE(use_host("dgx-a100"));
  write_telemetry(full_sample(k_mig_parent) + "sample\tuuid=" + k_mig +
                  "\tfb_used=3000\tfb_free=20000000000\tfb_reserved=1000\n");
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  const auto [index, slot] = find(*nvml, k_mig);
  ASSERT_NE(slot, std::nullopt);
  auto sample = nvml->sample(index, slot);
  ASSERT_TRUE(sample) << sample.error().message;
  NvmlSample expected;
  expected.fb_total_bytes = 20000004000ULL;
  expected.fb_used_bytes = 3000;
  expected.fb_free_bytes = 20000000000ULL;
  expected.fb_reserved_bytes = 1000;
  EXPECT_EQ(*sample, expected);

  // The parent's readings are its own, whatever its MIG devices say.
  auto parent = nvml->sample(index);
  ASSERT_TRUE(parent) << parent.error().message;
  EXPECT_EQ(*parent, full_expected());

  write_telemetry("sample\tuuid=" + std::string(k_mig) + "\tfb_used=NVML_ERROR_GPU_IS_LOST\n");
  auto lost = nvml->sample(index, slot);
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().message, "nvml: GPU " + std::to_string(index) + " MIG " + std::to_string(*slot) +
                                      ": nvmlDeviceGetMemoryInfo_v2: GPU is lost");

  auto free_slot = nvml->sample(index, 6);  // no MIG device there
  ASSERT_FALSE(free_slot);
  EXPECT_EQ(free_slot.error().message,
            "nvml: GPU " + std::to_string(index) + " MIG 6: nvmlDeviceGetMigDeviceHandleByIndex: Not Found");
}

// A library from before these calls (nvml-missing-optional also lacks nvmlDeviceGetMemoryInfo): every
// reading nullopt, no error, and the report says nothing of them.
TEST_F(NvmlSampleTest, ALibraryWithoutTheCallsGivesNoReadings) {
  ASSERT_TRUE(use_host("nvml-missing-optional"));
  const std::vector<std::string> calls = {"nvmlDeviceGetClockInfo",
                                          "nvmlDeviceGetTemperature",
                                          "nvmlDeviceGetFieldValues",
                                          "nvmlDeviceGetPowerUsage",
                                          "nvmlDeviceGetTotalEnergyConsumption",
                                          "nvmlDeviceGetPcieThroughput",
                                          "nvmlDeviceGetPcieReplayCounter",
                                          "nvmlDeviceGetUtilizationRates",
                                          "nvmlDeviceGetEncoderUtilization",
                                          "nvmlDeviceGetDecoderUtilization",
                                          "nvmlDeviceGetMemoryInfo_v2",
                                          "nvmlDeviceGetRemappedRows",
                                          "nvmlDeviceGetTotalEccErrors",
                                          "nvmlDeviceGetRetiredPages",
                                          "nvmlDeviceGetRetiredPagesPendingStatus"};
  auto hidden = fixture::hide_mock_nvml_symbols(read_file(library()).value(), calls);
  ASSERT_TRUE(hidden) << hidden.error().message;
  ASSERT_TRUE(write_file_atomic(library(), *hidden, 0755, Durability::atomic_only));
  const std::string uuid = "GPU-278bc4be-6a4d-59a8-813e-a83915f82aa4";
  write_telemetry(full_sample(uuid));
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto report = nvml->report();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->warnings, std::vector<std::string>{
                                  "nvml: " + library() +
                                  " lacks nvmlSystemGetCudaDriverVersion, nvmlDeviceGetMemoryInfo, "
                                  "nvmlDeviceGetAttributes_v2 (an older driver?); unknown: the CUDA version, "
                                  "GPU memory, MIG profiles and MIG memory"});
  auto sample = nvml->sample(find(*nvml, uuid).first);
  ASSERT_TRUE(sample) << sample.error().message;
  EXPECT_EQ(*sample, NvmlSample{});
}

}  // namespace
}  // namespace gpuctk::discover
