// One device's readings for gpuctk-exporter (Nvml::sample): each field of NvmlSample from the NVML call
// it names, on a GPU handle or a MIG device's. NVML answers per call; a call this device cannot do is a
// reading left out, and only an answer saying NVML itself is gone fails the sample.
#include <algorithm>
#include <climits>
#include <cstring>
#include <iterator>
#include <string>

#include "discover/nvml.hpp"
#include "discover/nvml_abi.h"
#include "discover/nvml_library.hpp"

namespace gpuctk::discover {

namespace {

using nvml_detail::Api;

// NVML's answers that mean "this device cannot give that reading", not "NVML cannot serve".
constexpr nvmlReturn_t k_absent[] = {
    NVML_ERROR_NOT_SUPPORTED,       // the device lacks it (a GeForce's ECC counters, a T4's NVLinks)
    NVML_ERROR_NO_PERMISSION,       // refused to this caller (some counters need root)
    NVML_ERROR_NOT_FOUND,           // nothing of the kind on this device
    NVML_ERROR_FUNCTION_NOT_FOUND,  // this NVML build does not implement it
    NVML_ERROR_INVALID_ARGUMENT,    // NVML's answer to a query a MIG handle cannot do
};

bool absent(nvmlReturn_t rc) {
  return std::ranges::find(k_absent, rc) != std::end(k_absent);
}

// The field values of nvmlDeviceGetFieldValues, in the order Sampler::fields stores them.
constexpr struct {
  unsigned id;
  unsigned scope;
  const char* name;
} k_fields[] = {
    {NVML_FI_DEV_MEMORY_TEMP, 0, "NVML_FI_DEV_MEMORY_TEMP"},  // degrees C
    // KiB since the driver loaded; the counters are per link by scope, and UINT_MAX is their sum.
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, UINT_MAX, "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX"},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, UINT_MAX, "NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX"},
};

// A field value of any numeric type as a count; nullopt for a negative one (no reading of ours is).
std::optional<uint64_t> field_number(const nvmlFieldValue_t& field) {
  const nvmlValue_t& v = field.value;
  // The type as the plain number NVML wrote: a newer driver's type may lie outside the enum's range.
  unsigned type = 0;
  static_assert(sizeof type == sizeof field.valueType);
  std::memcpy(&type, &field.valueType, sizeof type);
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE:
      return v.dVal >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(v.dVal)) : std::nullopt;
    case NVML_VALUE_TYPE_UNSIGNED_INT:
      return v.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG:
      return v.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
      return v.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
      return v.sllVal >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(v.sllVal)) : std::nullopt;
    case NVML_VALUE_TYPE_SIGNED_INT:
      return v.siVal >= 0 ? std::optional<uint64_t>(static_cast<uint64_t>(v.siVal)) : std::nullopt;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT:
      return v.usVal;
  }
  return std::nullopt;  // a type newer than this code
}

// Reads one device: every call through got(), which sorts NVML's answer into a value, an absent
// reading, or the error that ends the sample.
class Sampler {
 public:
  Sampler(const Api& api, nvmlDevice_t device, std::string where)
      : m_api(api), m_device(device), m_where(std::move(where)) {}

  Result<NvmlSample> run() const {
    NvmlSample s;
    GPUCTK_TRY(one<unsigned>(s.sm_clock_mhz, m_api.clock_info, "nvmlDeviceGetClockInfo", NVML_CLOCK_SM));
    GPUCTK_TRY(one<unsigned>(s.memory_clock_mhz, m_api.clock_info, "nvmlDeviceGetClockInfo", NVML_CLOCK_MEM));
    GPUCTK_TRY(one<unsigned>(s.gpu_temperature_c, m_api.temperature, "nvmlDeviceGetTemperature",
                             NVML_TEMPERATURE_GPU));
    GPUCTK_TRY(one<unsigned>(s.power_mw, m_api.power_usage, "nvmlDeviceGetPowerUsage"));
    GPUCTK_TRY(
        one<unsigned long long>(s.energy_mj, m_api.total_energy, "nvmlDeviceGetTotalEnergyConsumption"));
    GPUCTK_TRY(one<unsigned>(s.pcie_tx_kb_per_s, m_api.pcie_throughput, "nvmlDeviceGetPcieThroughput",
                             NVML_PCIE_UTIL_TX_BYTES));
    GPUCTK_TRY(one<unsigned>(s.pcie_rx_kb_per_s, m_api.pcie_throughput, "nvmlDeviceGetPcieThroughput",
                             NVML_PCIE_UTIL_RX_BYTES));
    GPUCTK_TRY(one<unsigned>(s.pcie_replays, m_api.pcie_replays, "nvmlDeviceGetPcieReplayCounter"));
    GPUCTK_TRY(utilization(s));
    GPUCTK_TRY(codec(s.encoder_utilization, m_api.encoder_utilization, "nvmlDeviceGetEncoderUtilization"));
    GPUCTK_TRY(codec(s.decoder_utilization, m_api.decoder_utilization, "nvmlDeviceGetDecoderUtilization"));
    GPUCTK_TRY(memory(s));
    GPUCTK_TRY(remapped_rows(s));
    GPUCTK_TRY(fields(s));
    GPUCTK_TRY(ecc(s));
    GPUCTK_TRY(retired_pages(s));
    return s;
  }

 private:
  // true: NVML gave the value; false: this device cannot give it; an error: NVML can no longer serve.
  Result<bool> got(nvmlReturn_t rc, const char* call) const {
    if (rc == NVML_SUCCESS) {
      return true;
    }
    if (absent(rc)) {
      return false;
    }
    return fail("nvml: " + m_where + ": " + call + ": " + m_api.error_string(rc));
  }

  // A call `fn(device, args..., &out)` with one value of NVML's type Out into `field`.
  template <typename Out, typename T, typename Fn, typename... Args>
  Result<void> one(std::optional<T>& field, Fn fn, const char* call, Args... args) const {
    if (fn == nullptr) {
      return {};
    }
    Out value{};
    GPUCTK_TRY_ASSIGN(const bool ok, got(fn(m_device, args..., &value), call));
    if (ok) {
      field = static_cast<T>(value);
    }
    return {};
  }

  Result<void> utilization(NvmlSample& s) const {
    nvmlUtilization_t rates{};
    if (m_api.utilization == nullptr) {
      return {};
    }
    GPUCTK_TRY_ASSIGN(const bool ok,
                      got(m_api.utilization(m_device, &rates), "nvmlDeviceGetUtilizationRates"));
    if (ok) {
      s.gpu_utilization = rates.gpu;
      s.memory_utilization = rates.memory;
    }
    return {};
  }

  // The encoder's or decoder's utilization; its sampling period is not part of the reading.
  template <typename Fn>
  Result<void> codec(std::optional<uint32_t>& field, Fn fn, const char* call) const {
    if (fn == nullptr) {
      return {};
    }
    unsigned percent = 0;
    unsigned period_us = 0;
    GPUCTK_TRY_ASSIGN(const bool ok, got(fn(m_device, &percent, &period_us), call));
    if (ok) {
      field = percent;
    }
    return {};
  }

  // _v2 splits the reserved memory out of `used`; the v1 call (an older driver) has no reserved part.
  Result<void> memory(NvmlSample& s) const {
    if (m_api.memory_v2 != nullptr) {
      nvmlMemory_v2_t memory{};
      memory.version = nvmlMemory_v2;
      GPUCTK_TRY_ASSIGN(const bool ok, got(m_api.memory_v2(m_device, &memory), "nvmlDeviceGetMemoryInfo_v2"));
      if (ok) {
        s.fb_total_bytes = memory.total;
        s.fb_used_bytes = memory.used;
        s.fb_free_bytes = memory.free;
        s.fb_reserved_bytes = memory.reserved;
      }
      return {};
    }
    if (m_api.memory == nullptr) {
      return {};
    }
    nvmlMemory_t memory{};
    GPUCTK_TRY_ASSIGN(const bool ok, got(m_api.memory(m_device, &memory), "nvmlDeviceGetMemoryInfo"));
    if (ok) {
      s.fb_total_bytes = memory.total;
      s.fb_used_bytes = memory.used;
      s.fb_free_bytes = memory.free;
    }
    return {};
  }

  Result<void> remapped_rows(NvmlSample& s) const {
    if (m_api.remapped_rows == nullptr) {
      return {};
    }
    unsigned correctable = 0;
    unsigned uncorrectable = 0;
    unsigned pending = 0;
    unsigned failure = 0;
    GPUCTK_TRY_ASSIGN(const bool ok,
                      got(m_api.remapped_rows(m_device, &correctable, &uncorrectable, &pending, &failure),
                          "nvmlDeviceGetRemappedRows"));
    if (ok) {
      s.remapped_rows_correctable = correctable;
      s.remapped_rows_uncorrectable = uncorrectable;
      s.row_remap_pending = pending != 0;
      s.row_remap_failure = failure != 0;
    }
    return {};
  }

  // One call for every field of k_fields; each field carries its own answer.
  Result<void> fields(NvmlSample& s) const {
    if (m_api.field_values == nullptr) {
      return {};
    }
    nvmlFieldValue_t values[std::size(k_fields)] = {};
    for (size_t i = 0; i < std::size(k_fields); ++i) {
      values[i].fieldId = k_fields[i].id;
      values[i].scopeId = k_fields[i].scope;
    }
    const int count = static_cast<int>(std::size(values));
    GPUCTK_TRY_ASSIGN(const bool ok,
                      got(m_api.field_values(m_device, count, values), "nvmlDeviceGetFieldValues"));
    if (!ok) {
      return {};
    }
    std::optional<uint64_t> numbers[std::size(k_fields)];
    for (size_t i = 0; i < std::size(k_fields); ++i) {
      const std::string call = std::string("nvmlDeviceGetFieldValues ") + k_fields[i].name;
      GPUCTK_TRY_ASSIGN(const bool given, got(values[i].nvmlReturn, call.c_str()));
      numbers[i] = given ? field_number(values[i]) : std::nullopt;
    }
    if (numbers[0]) {
      s.memory_temperature_c = static_cast<uint32_t>(*numbers[0]);
    }
    s.nvlink_tx_kib = numbers[1];
    s.nvlink_rx_kib = numbers[2];
    return {};
  }

  Result<void> ecc(NvmlSample& s) const {
    constexpr const char* k_call = "nvmlDeviceGetTotalEccErrors";
    const auto fn = m_api.total_ecc;
    GPUCTK_TRY(one<unsigned long long>(s.ecc_sbe_volatile, fn, k_call, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                       NVML_VOLATILE_ECC));
    GPUCTK_TRY(one<unsigned long long>(s.ecc_dbe_volatile, fn, k_call, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                       NVML_VOLATILE_ECC));
    GPUCTK_TRY(one<unsigned long long>(s.ecc_sbe_aggregate, fn, k_call, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                       NVML_AGGREGATE_ECC));
    GPUCTK_TRY(one<unsigned long long>(s.ecc_dbe_aggregate, fn, k_call, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                       NVML_AGGREGATE_ECC));
    return {};
  }

  // Counts only: no addresses are read.
  Result<void> retired_pages(NvmlSample& s) const {
    if (m_api.retired_pages != nullptr) {
      GPUCTK_TRY(
          retired_count(s.retired_pages_sbe, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS));
      GPUCTK_TRY(retired_count(s.retired_pages_dbe, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR));
    }
    if (m_api.retired_pending == nullptr) {
      return {};
    }
    nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
    GPUCTK_TRY_ASSIGN(const bool ok, got(m_api.retired_pending(m_device, &pending),
                                         "nvmlDeviceGetRetiredPagesPendingStatus"));
    if (ok) {
      s.retired_pages_pending = pending == NVML_FEATURE_ENABLED;
    }
    return {};
  }

  // With room for 0 NVML writes the count and says INSUFFICIENT_SIZE when there are pages to count.
  Result<void> retired_count(std::optional<uint32_t>& field, nvmlPageRetirementCause_t cause) const {
    unsigned count = 0;
    nvmlReturn_t rc = m_api.retired_pages(m_device, cause, &count, nullptr);
    rc = rc == NVML_ERROR_INSUFFICIENT_SIZE ? NVML_SUCCESS : rc;
    GPUCTK_TRY_ASSIGN(const bool ok, got(rc, "nvmlDeviceGetRetiredPages"));
    if (ok) {
      field = count;
    }
    return {};
  }

  const Api& m_api;
  nvmlDevice_t m_device;
  std::string m_where;
};

}  // namespace

Result<NvmlSample> Nvml::sample(uint32_t gpu_index, std::optional<uint32_t> mig_index) const {
  const Api& api = m_library->api;
  std::string where = "GPU " + std::to_string(gpu_index);
  const auto lookup = [&](nvmlReturn_t rc, const char* call) -> Result<void> {
    if (rc != NVML_SUCCESS) {
      return fail("nvml: " + where + ": " + call + ": " + api.error_string(rc));
    }
    return {};
  };
  nvmlDevice_t device = nullptr;
  GPUCTK_TRY(lookup(api.handle(gpu_index, &device), "nvmlDeviceGetHandleByIndex_v2"));
  if (mig_index) {
    where += " MIG " + std::to_string(*mig_index);
    nvmlDevice_t parent = device;
    GPUCTK_TRY(lookup(api.mig_handle(parent, *mig_index, &device), "nvmlDeviceGetMigDeviceHandleByIndex"));
  }
  return Sampler(api, device, std::move(where)).run();
}

}  // namespace gpuctk::discover
