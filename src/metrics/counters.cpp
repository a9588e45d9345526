#include "metrics/counters.hpp"

#include <algorithm>
#include <array>
#include <set>

#include "metrics/exposition.hpp"
#include "util/strings.hpp"
#include "util/utf8.hpp"

namespace gpuctk::metrics {

namespace {

using discover::NvmlSample;

// The value of a reading NVML gives in DCGM's unit already (MHz, C, %, counts; a bool as 0 or 1).
template <auto member>
std::optional<double> plain(const DeviceReading& reading) {
  const auto& value = reading.sample.*member;
  return value ? std::optional<double>(static_cast<double>(*value)) : std::nullopt;
}

// Bytes as DCGM's framebuffer fields give them: whole MiB, rounded down.
template <auto member>
std::optional<double> mebibytes(const DeviceReading& reading) {
  const auto& value = reading.sample.*member;
  return value ? std::optional<double>(static_cast<double>(*value / 1048576)) : std::nullopt;
}

// NVML's KB/s of PCIe throughput (its KB is 1024 bytes) as DCGM_FI_PROF_PCIE_*_BYTES' bytes per second.
template <auto member>
std::optional<double> bytes_per_second(const DeviceReading& reading) {
  const auto& value = reading.sample.*member;
  return value ? std::optional<double>(static_cast<double>(*value) * 1024.0) : std::nullopt;
}

// NVML's milliwatts as DCGM's watts, with the fraction DCGM keeps.
std::optional<double> watts(const DeviceReading& reading) {
  const auto& mw = reading.sample.power_mw;
  return mw ? std::optional<double>(*mw / 1000.0) : std::nullopt;
}

// Both directions of every NVLink together, in KiB since the driver loaded (NVML's throughput counters
// count KiB): the total DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL sums. Unknown unless NVML gives both.
std::optional<double> nvlink_kib(const DeviceReading& reading) {
  const auto& tx = reading.sample.nvlink_tx_kib;
  const auto& rx = reading.sample.nvlink_rx_kib;
  return tx && rx ? std::optional<double>(static_cast<double>(*tx) + static_cast<double>(*rx)) : std::nullopt;
}

// The last Xid the exporter's event watch saw on the device, not part of a sample.
std::optional<double> last_xid(const DeviceReading& reading) {
  return reading.last_xid ? std::optional<double>(static_cast<double>(*reading.last_xid)) : std::nullopt;
}

constexpr auto k_gauge = MetricType::gauge;
constexpr auto k_counter = MetricType::counter;

// Every DCGM field gpuctk-exporter reads, in the order of dcgm-exporter's default counters file, with
// DCGM's type as that file gives it (its commented lines for ECC and retired pages). Made on first use
// (all_fields), so that no other static's initialisation can see it unmade.
std::vector<Field> make_fields() {
  return {
      {"DCGM_FI_DEV_SM_CLOCK", k_gauge, plain<&NvmlSample::sm_clock_mhz>, true},             // MHz
      {"DCGM_FI_DEV_MEM_CLOCK", k_gauge, plain<&NvmlSample::memory_clock_mhz>, true},        // MHz
      {"DCGM_FI_DEV_MEMORY_TEMP", k_gauge, plain<&NvmlSample::memory_temperature_c>, true},  // C
      {"DCGM_FI_DEV_GPU_TEMP", k_gauge, plain<&NvmlSample::gpu_temperature_c>, true},        // C
      {"DCGM_FI_DEV_POWER_USAGE", k_gauge, watts, false},                                    // W, fractional
      // mJ since the driver loaded
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", k_counter, plain<&NvmlSample::energy_mj>, true},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", k_counter, plain<&NvmlSample::pcie_replays>, true},
      {"DCGM_FI_DEV_GPU_UTIL", k_gauge, plain<&NvmlSample::gpu_utilization>, true},  // %
      // %: NVML's "memory" utilisation is the copy engine's share of time, DCGM's MEM_COPY_UTIL
      {"DCGM_FI_DEV_MEM_COPY_UTIL", k_gauge, plain<&NvmlSample::memory_utilization>, true},
      {"DCGM_FI_DEV_ENC_UTIL", k_gauge, plain<&NvmlSample::encoder_utilization>, true},  // %
      {"DCGM_FI_DEV_DEC_UTIL", k_gauge, plain<&NvmlSample::decoder_utilization>, true},  // %
      {"DCGM_FI_DEV_XID_ERRORS", k_gauge, last_xid, true},  // the last Xid, a gauge as DCGM has it
      {"DCGM_FI_DEV_FB_FREE", k_gauge, mebibytes<&NvmlSample::fb_free_bytes>, true},          // MiB
      {"DCGM_FI_DEV_FB_USED", k_gauge, mebibytes<&NvmlSample::fb_used_bytes>, true},          // MiB
      {"DCGM_FI_DEV_FB_RESERVED", k_gauge, mebibytes<&NvmlSample::fb_reserved_bytes>, true},  // MiB
      {"DCGM_FI_DEV_FB_TOTAL", k_gauge, mebibytes<&NvmlSample::fb_total_bytes>, true},        // MiB
      // ECC error counts: corrected (single-bit) and uncorrected (double-bit), since the driver loaded
      // (volatile) and over the board's life (aggregate)
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", k_counter, plain<&NvmlSample::ecc_sbe_volatile>, true},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", k_counter, plain<&NvmlSample::ecc_dbe_volatile>, true},
      {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", k_counter, plain<&NvmlSample::ecc_sbe_aggregate>, true},
      {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", k_counter, plain<&NvmlSample::ecc_dbe_aggregate>, true},
      // Retired pages (pre-Ampere boards): counts per cause; PENDING is NVML's pending status as 0 or 1,
      // which is what DCGM reads for it too
      {"DCGM_FI_DEV_RETIRED_SBE", k_counter, plain<&NvmlSample::retired_pages_sbe>, true},
      {"DCGM_FI_DEV_RETIRED_DBE", k_counter, plain<&NvmlSample::retired_pages_dbe>, true},
      {"DCGM_FI_DEV_RETIRED_PENDING", k_counter, plain<&NvmlSample::retired_pages_pending>, true},
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", k_counter, nvlink_kib, true},  // KiB, tx + rx, all links
      // Row remapping (Ampere and later): counts, then failure and pending as 0 or 1
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", k_counter, plain<&NvmlSample::remapped_rows_uncorrectable>,
       true},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", k_counter, plain<&NvmlSample::remapped_rows_correctable>,
       true},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", k_gauge, plain<&NvmlSample::row_remap_failure>, true},
      {"DCGM_FI_DEV_ROW_REMAP_PENDING", k_gauge, plain<&NvmlSample::row_remap_pending>, true},
      // A label on every other metric: the collection's driver version
      {"DCGM_FI_DRIVER_VERSION", MetricType::label, nullptr, false},
      // bytes/s over PCIe, headers included: what nvmlDeviceGetPcieThroughput measures
      {"DCGM_FI_PROF_PCIE_TX_BYTES", k_gauge, bytes_per_second<&NvmlSample::pcie_tx_kb_per_s>, true},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", k_gauge, bytes_per_second<&NvmlSample::pcie_rx_kb_per_s>, true},
  };
}

struct DefaultRow {
  std::string_view name;
  std::string_view help;
};

// dcgm-exporter's etc/default-counters.csv (tag 4.5.3-4.8.2): the fields of it gpuctk-exporter reads, in
// its order, with its HELP texts; the ECC and retired-page rows are its commented ones, which the
// exporter serves where the GPU has them. tests/metrics/counters_test.cpp compares this with the file
// (tests/data/dcgm-exporter/default-counters.csv).
constexpr std::array k_default_rows = {
    DefaultRow{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."},
    DefaultRow{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)."},
    DefaultRow{"DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C)."},
    DefaultRow{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."},
    DefaultRow{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."},
    DefaultRow{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ)."},
    DefaultRow{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries."},
    DefaultRow{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."},
    DefaultRow{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)."},
    DefaultRow{"DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %)."},
    DefaultRow{"DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %)."},
    DefaultRow{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."},
    DefaultRow{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."},
    DefaultRow{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."},
    DefaultRow{"DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB)."},
    DefaultRow{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors."},
    DefaultRow{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors."},
    DefaultRow{"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "Total number of single-bit persistent ECC errors."},
    DefaultRow{"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "Total number of double-bit persistent ECC errors."},
    DefaultRow{"DCGM_FI_DEV_RETIRED_SBE", "Total number of retired pages due to single-bit errors."},
    DefaultRow{"DCGM_FI_DEV_RETIRED_DBE", "Total number of retired pages due to double-bit errors."},
    DefaultRow{"DCGM_FI_DEV_RETIRED_PENDING", "Total number of pages pending retirement."},
    DefaultRow{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
               "Total number of NVLink bandwidth counters for all lanes."},
    DefaultRow{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors"},
    DefaultRow{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors"},
    DefaultRow{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed"},
    DefaultRow{"DCGM_FI_DRIVER_VERSION", "Driver Version"},
    DefaultRow{"DCGM_FI_PROF_PCIE_TX_BYTES",
               "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
               "payloads - in bytes per second."},
    DefaultRow{"DCGM_FI_PROF_PCIE_RX_BYTES",
               "The rate of data received over the PCIe bus - including both protocol headers and data "
               "payloads - in bytes per second."},
};

// What a counters file may hold (the contract in counters.hpp).
constexpr std::size_t k_max_file_bytes = 1024 * 1024;
constexpr std::size_t k_max_lines = 4096;
constexpr std::size_t k_max_line_bytes = 4096;

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::gauge:
      return "gauge";
    case MetricType::counter:
      return "counter";
    case MetricType::label:
      return "label";
  }
  return "gauge";
}

std::optional<MetricType> parse_type(std::string_view text) {
  for (const auto type : {MetricType::gauge, MetricType::counter, MetricType::label}) {
    if (text == type_name(type)) {
      return type;
    }
  }
  return std::nullopt;
}

bool is_field_name(std::string_view name) {
  return !name.empty() && std::ranges::all_of(name, [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Text the exposition can carry: UTF-8 without control characters (tab allowed).
bool is_text(std::string_view line) {
  for (std::size_t at = 0; at < line.size();) {
    const auto c = static_cast<unsigned char>(line[at]);
    if ((c < 0x20 && c != '\t') || c == 0x7F) {
      return false;
    }
    char32_t code_point = 0;
    const std::size_t length = c < 0x80 ? 1 : utf8_sequence_length(line.substr(at), code_point);
    if (length == 0) {
      return false;
    }
    at += length;
  }
  return true;
}

// A HELP text in CSV double quotes, as dcgm-exporter's CSV reader would take it: the quotes off, each
// doubled quote inside one quote.
std::string unquote_help(std::string_view help) {
  if (help.size() < 2 || help.front() != '"' || help.back() != '"') {
    return std::string(help);
  }
  std::string out;
  const std::string_view inner = help.substr(1, help.size() - 2);
  for (std::size_t i = 0; i < inner.size(); ++i) {
    out += inner[i];
    if (inner[i] == '"' && i + 1 < inner.size() && inner[i + 1] == '"') {
      ++i;
    }
  }
  return out;
}

// Why a field name the table lacks is left out.
std::string_view unreadable_reason(std::string_view name) {
  if (name.starts_with("DCGM_FI_PROF_")) {
    return "a profiling field: only DCGM itself reads it, NVML does not give it";
  }
  if (name.starts_with("DCGM_EXP_")) {
    return "one of dcgm-exporter's own fields, made from DCGM's health and event watches";
  }
  if (name.starts_with("DCGM_FI_")) {
    return "a DCGM field gpuctk-exporter does not read from NVML";
  }
  return "not a DCGM field gpuctk-exporter knows";
}

// One line of a counters file, split and checked.
struct Line {
  std::string_view name;
  MetricType type = MetricType::gauge;
  std::string_view help;
};

Result<Line> split_line(std::string_view line, const std::string& where) {
  const auto first = line.find(',');
  const auto second = first == std::string_view::npos ? first : line.find(',', first + 1);
  if (second == std::string_view::npos) {
    return fail(where + ": want \"FIELD, type, help\", got " + escape_for_log(quote(line), 200));
  }
  Line out{trim(line.substr(0, first)), MetricType::gauge, trim(line.substr(second + 1))};
  if (!is_field_name(out.name)) {
    return fail(where + ": field name " + escape_for_log(quote(out.name), 200) + ": want [A-Z0-9_]+");
  }
  const auto type_text = trim(line.substr(first + 1, second - first - 1));
  const auto type = parse_type(type_text);
  if (!type) {
    return fail(where + ": type " + escape_for_log(quote(type_text), 200) + ": want gauge, counter or label");
  }
  out.type = *type;
  return out;
}

// The warning for a type the file gives that does not fit the field, or "" when it fits. `kept` tells
// whether the line still counts.
std::string type_warning(const Field& field, MetricType type, bool& kept) {
  kept = true;
  if (type == field.type) {
    return {};
  }
  const std::string is = std::string(field.name) + " is a " + std::string(type_name(field.type));
  if (type == MetricType::label || field.type == MetricType::label) {
    kept = false;
    return is + ", not a " + std::string(type_name(type)) + ": left out";
  }
  return is + " in DCGM; the file's " + std::string(type_name(type)) + " is used";
}

// The lines of `text` (a trailing newline ends the last one, it does not start another).
std::vector<std::string_view> lines_of(std::string_view text) {
  auto lines = split(text, '\n');
  if (!lines.empty() && lines.back().empty()) {
    lines.pop_back();
  }
  return lines;
}

Result<void> check_shape(std::string_view text, const std::string& origin) {
  if (text.size() > k_max_file_bytes) {
    return fail(origin + ": " + std::to_string(text.size()) + " bytes: a counters file has at most 1 MiB");
  }
  if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    return fail(origin + ":" + std::to_string(line) + ": a NUL byte: not a counters file");
  }
  return {};
}

// Adds the field of one checked line to `out`, or a warning for why it is left out.
void add_line(const Line& line, const std::string& where, std::set<std::string_view>& seen, Counters& out) {
  if (!seen.insert(line.name).second) {
    out.warnings.push_back(where + ": " + std::string(line.name) + " named again: the first line counts");
    return;
  }
  const Field* field = find_field(line.name);
  if (field == nullptr) {
    out.warnings.push_back(where + ": " + std::string(line.name) +
                           " left out: " + std::string(unreadable_reason(line.name)));
    return;
  }
  bool kept = true;
  if (auto warning = type_warning(*field, line.type, kept); !warning.empty()) {
    out.warnings.push_back(where + ": " + warning);
  }
  if (kept) {
    out.counters.push_back(Counter{field, line.type, unquote_help(line.help)});
  }
}

Counters make_defaults() {
  Counters out;
  for (const auto& row : k_default_rows) {
    const Field* field = find_field(row.name);
    out.counters.push_back(Counter{field, field->type, std::string(row.help)});
  }
  return out;
}

}  // namespace

const std::vector<Field>& all_fields() {
  static const std::vector<Field> fields = make_fields();
  return fields;
}

const Field* find_field(std::string_view name) {
  const auto& fields = all_fields();
  const auto it = std::ranges::find(fields, name, &Field::name);
  return it == fields.end() ? nullptr : &*it;
}

Result<Counters> parse_counters(std::string_view text, std::string_view origin) {
  const std::string where_file = escape_for_log(origin, 1024);
  GPUCTK_TRY(check_shape(text, where_file));
  const auto lines = lines_of(text);
  if (lines.size() > k_max_lines) {
    return fail(where_file + ": " + std::to_string(lines.size()) +
                " lines: a counters file has at most 4096");
  }
  Counters out;
  std::set<std::string_view> seen;
  std::size_t metrics = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line.ends_with('\r')) {
      line.remove_suffix(1);  // CRLF: a file written on Windows, or a ConfigMap pasted from one
    }
    const std::string where = where_file + ":" + std::to_string(i + 1);
    if (line.size() > k_max_line_bytes) {
      return fail(where + ": a line of " + std::to_string(line.size()) + " bytes: at most 4096");
    }
    if (!is_text(line)) {
      return fail(where + ": a control character or bytes that are not UTF-8: not a counters file");
    }
    const auto content = trim(line);
    if (content.empty() || content.front() == '#') {
      continue;
    }
    GPUCTK_TRY_ASSIGN(const Line parsed, split_line(content, where));
    metrics += parsed.type == MetricType::label ? 0 : 1;
    add_line(parsed, where, seen, out);
  }
  if (metrics == 0) {
    return fail(where_file + ": no gauge or counter: not a counters file");
  }
  return out;
}

const Counters& default_counters() {
  static const Counters defaults = make_defaults();
  return defaults;
}

}  // namespace gpuctk::metrics
