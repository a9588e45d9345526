// The DCGM fields gpuctk-exporter reads from NVML, its built-in set against dcgm-exporter's own default
// file (tests/data/dcgm-exporter), and the counters file parser on good and hostile files.
#include "metrics/counters.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "metrics/exposition.hpp"

namespace gpuctk::metrics {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const std::string k_default_file =
    std::string(GPUCTK_SOURCE_DIR) + "/tests/data/dcgm-exporter/default-counters.csv";

std::string describe(const Counter& counter) {
  const char* type = counter.type == MetricType::gauge     ? "gauge"
                     : counter.type == MetricType::counter ? "counter"
                                                           : "label";
  return std::string(counter.field->name) + ", " + type + ", " + counter.help;
}

std::vector<std::string> describe(const std::vector<Counter>& counters) {
  std::vector<std::string> out;
  for (const auto& c : counters) {
    out.push_back(describe(c));
  }
  return out;
}

// The fields of dcgm-exporter's default file gpuctk-exporter leaves out, and why.
const std::map<std::string, std::string> k_left_out = {
    // Profiling fields come from DCGM's own profiling module (the GPU's performance counters sampled by
    // DCGM), which NVML does not expose.
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "profiling: DCGM only"},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "profiling: DCGM only"},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "profiling: DCGM only"},
    // The vGPU license state is a vGPU guest's; gpuctk-exporter serves bare-metal and passthrough GPUs.
    {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "vGPU guests only, not read"},
};

// The commented lines of the default file that the built-in set serves where the GPU has them.
const std::set<std::string> k_commented_served = {
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "DCGM_FI_DEV_RETIRED_SBE",       "DCGM_FI_DEV_RETIRED_DBE",
    "DCGM_FI_DEV_RETIRED_PENDING",
};

TEST(MetricsCounters, DefaultFileParsesWithAWarningForEachFieldLeftOut) {
  const std::string text = read_text(k_default_file);
  ASSERT_FALSE(text.empty()) << k_default_file;
  const auto parsed = parse_counters(text, "default-counters.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  std::set<std::string> warned;
  for (const auto& warning : parsed->warnings) {
    const auto name_start = warning.find(": ") + 2;
    const auto name = warning.substr(name_start, warning.find(' ', name_start) - name_start);
    warned.insert(name);
    EXPECT_TRUE(k_left_out.contains(name)) << warning;
  }
  EXPECT_EQ(warned.size(), k_left_out.size());
  EXPECT_EQ(parsed->warnings,
            (std::vector<std::string>{
                "default-counters.csv:69: DCGM_FI_DEV_VGPU_LICENSE_STATUS left out: a DCGM field "
                "gpuctk-exporter does not read from NVML",
                "default-counters.csv:89: DCGM_FI_PROF_GR_ENGINE_ACTIVE left out: a profiling "
                "field: only DCGM itself reads it, NVML does not give it",
                "default-counters.csv:92: DCGM_FI_PROF_PIPE_TENSOR_ACTIVE left out: a profiling "
                "field: only DCGM itself reads it, NVML does not give it",
                "default-counters.csv:93: DCGM_FI_PROF_DRAM_ACTIVE left out: a profiling field: "
                "only DCGM itself reads it, NVML does not give it",
            }));
}

TEST(MetricsCounters, DefaultsAreTheDefaultFileAsFarAsNvmlGoes) {
  const auto parsed = parse_counters(read_text(k_default_file), "default-counters.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  const auto defaults = describe(default_counters().counters);
  // Every field of the file gpuctk reads: the same name, type and HELP, in the file's order.
  std::vector<std::string> served_from_file;
  for (const auto& line : defaults) {
    if (!k_commented_served.contains(line.substr(0, line.find(',')))) {
      served_from_file.push_back(line);
    }
  }
  EXPECT_EQ(served_from_file, describe(parsed->counters));
  EXPECT_EQ(defaults.size(), parsed->counters.size() + k_commented_served.size());
}

TEST(MetricsCounters, DefaultsServeTheCommentedEccAndRetiredPageLinesAsTheFileWritesThem) {
  // The file's commented lines, uncommented: the built-in set has them with their types and HELP.
  std::string uncommented;
  std::istringstream in(read_text(k_default_file));
  for (std::string line; std::getline(in, line);) {
    const auto name = line.substr(std::min<std::size_t>(2, line.size()), line.find(',') - 2);
    if (line.starts_with("# DCGM_") && k_commented_served.contains(name)) {
      uncommented += line.substr(2) + "\n";
    }
  }
  const auto parsed = parse_counters(uncommented, "commented");
  ASSERT_TRUE(parsed) << parsed.error().message;
  ASSERT_EQ(parsed->counters.size(), k_commented_served.size());
  EXPECT_TRUE(parsed->warnings.empty());
  const auto defaults = describe(default_counters().counters);
  for (const auto& line : describe(parsed->counters)) {
    EXPECT_NE(std::ranges::find(defaults, line), defaults.end()) << line;
  }
}

TEST(MetricsCounters, EveryFieldHasAUniqueNameAndIsFoundByIt) {
  std::set<std::string_view> names;
  for (const auto& field : all_fields()) {
    EXPECT_TRUE(names.insert(field.name).second) << field.name;
    EXPECT_EQ(find_field(field.name), &field);
    EXPECT_EQ(field.value == nullptr, field.type == MetricType::label) << field.name;
  }
  EXPECT_EQ(all_fields().size(), 31u);
  EXPECT_EQ(find_field("DCGM_FI_PROF_SM_ACTIVE"), nullptr);
  EXPECT_EQ(find_field(""), nullptr);
}

TEST(MetricsCounters, AnEmptyReadingHasNoValueAtAll) {
  const DeviceReading reading;  // NVML gave nothing: never a made-up 0
  for (const auto& field : all_fields()) {
    if (field.value != nullptr) {
      EXPECT_EQ(field.value(reading), std::nullopt) << field.name;
    }
  }
}

std::optional<double> value_of(std::string_view name, const DeviceReading& reading) {
  const Field* field = find_field(name);
  EXPECT_NE(field, nullptr) << name;
  return field == nullptr ? std::nullopt : field->value(reading);
}

TEST(MetricsCounters, FieldsGiveDcgmsUnits) {
  DeviceReading r;
  auto& s = r.sample;
  s.sm_clock_mhz = 1410;
  s.memory_clock_mhz = 1215;
  s.gpu_temperature_c = 34;
  s.memory_temperature_c = 40;
  s.power_mw = 123456;
  s.energy_mj = 9876543210123;
  s.pcie_tx_kb_per_s = 7;
  s.pcie_rx_kb_per_s = 4000000;
  s.pcie_replays = 2;
  s.gpu_utilization = 99;
  s.memory_utilization = 12;
  s.encoder_utilization = 3;
  s.decoder_utilization = 4;
  s.fb_total_bytes = 40ULL << 30;
  s.fb_used_bytes = 3 * 1048576 + 1048575;  // 3 MiB and a byte short of a fourth: floor
  s.fb_free_bytes = 1048575;
  s.fb_reserved_bytes = 1048576;
  s.remapped_rows_correctable = 5;
  s.remapped_rows_uncorrectable = 6;
  s.row_remap_pending = false;
  s.row_remap_failure = true;
  s.nvlink_tx_kib = 5;
  s.nvlink_rx_kib = 6;
  s.ecc_sbe_volatile = 11;
  s.ecc_dbe_volatile = 12;
  s.ecc_sbe_aggregate = 13;
  s.ecc_dbe_aggregate = 14;
  s.retired_pages_sbe = 15;
  s.retired_pages_dbe = 16;
  s.retired_pages_pending = true;
  r.last_xid = 79;
  const std::map<std::string, double> want = {
      {"DCGM_FI_DEV_SM_CLOCK", 1410},
      {"DCGM_FI_DEV_MEM_CLOCK", 1215},
      {"DCGM_FI_DEV_GPU_TEMP", 34},
      {"DCGM_FI_DEV_MEMORY_TEMP", 40},
      {"DCGM_FI_DEV_POWER_USAGE", 123.456},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 9876543210123.0},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", 7168},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", 4096000000.0},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 2},
      {"DCGM_FI_DEV_GPU_UTIL", 99},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", 12},
      {"DCGM_FI_DEV_ENC_UTIL", 3},
      {"DCGM_FI_DEV_DEC_UTIL", 4},
      {"DCGM_FI_DEV_FB_TOTAL", 40960},
      {"DCGM_FI_DEV_FB_USED", 3},
      {"DCGM_FI_DEV_FB_FREE", 0},
      {"DCGM_FI_DEV_FB_RESERVED", 1},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", 5},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 6},
      {"DCGM_FI_DEV_ROW_REMAP_PENDING", 0},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", 1},
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 11},
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", 11},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 12},
      {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", 13},
      {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 14},
      {"DCGM_FI_DEV_RETIRED_SBE", 15},
      {"DCGM_FI_DEV_RETIRED_DBE", 16},
      {"DCGM_FI_DEV_RETIRED_PENDING", 1},
      {"DCGM_FI_DEV_XID_ERRORS", 79},
  };
  std::size_t checked = 0;
  for (const auto& field : all_fields()) {
    if (field.value == nullptr) {
      continue;
    }
    const auto it = want.find(std::string(field.name));
    ASSERT_NE(it, want.end()) << field.name << " has no expected value here";
    EXPECT_EQ(field.value(r), it->second) << field.name;
    ++checked;
  }
  EXPECT_EQ(checked, want.size());
}

TEST(MetricsCounters, NvlinkBandwidthNeedsBothDirections) {
  DeviceReading r;
  r.sample.nvlink_tx_kib = 5;
  EXPECT_EQ(value_of("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", r), std::nullopt);
  r.sample.nvlink_rx_kib = 0;
  EXPECT_EQ(value_of("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", r), 5.0);
}

TEST(MetricsCounters, IntegerFieldsAreAllButPower) {
  for (const auto& field : all_fields()) {
    if (field.type != MetricType::label) {
      EXPECT_EQ(field.integer, field.name != "DCGM_FI_DEV_POWER_USAGE") << field.name;
    }
  }
}

// ---- parse_counters: good files

TEST(MetricsCounters, ParsesSpacesCommentsCommasInHelpAndCrlf) {
  const auto parsed = parse_counters(
      "# comment\r\n"
      "\r\n"
      "   # an indented comment\n"
      "\tDCGM_FI_DEV_GPU_TEMP ,  gauge ,  GPU temperature, in C, as DCGM says.  \r\n"
      "DCGM_FI_DRIVER_VERSION,label,Driver Version\n"
      "DCGM_FI_DEV_POWER_USAGE, gauge, \"Power, \"\"drawn\"\" (in W).\"\n"
      "DCGM_FI_DEV_FB_USED, gauge,",
      "f.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(describe(parsed->counters),
            (std::vector<std::string>{
                "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature, in C, as DCGM says.",
                "DCGM_FI_DRIVER_VERSION, label, Driver Version",
                "DCGM_FI_DEV_POWER_USAGE, gauge, Power, \"drawn\" (in W).",
                "DCGM_FI_DEV_FB_USED, gauge, ",
            }));
  EXPECT_TRUE(parsed->warnings.empty());
}

TEST(MetricsCounters, UnknownAndUnreadableFieldsAreWarningsNeverFailures) {
  const auto parsed = parse_counters(
      "DCGM_FI_PROF_SM_ACTIVE, gauge, a\n"
      "DCGM_EXP_XID_ERRORS_COUNT, counter, b\n"
      "DCGM_FI_DEV_BRAND, label, c\n"
      "MY_OWN_METRIC, gauge, d\n"
      "DCGM_FI_DEV_GPU_TEMP, gauge, e\n",
      "f.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(describe(parsed->counters), std::vector<std::string>{"DCGM_FI_DEV_GPU_TEMP, gauge, e"});
  EXPECT_EQ(
      parsed->warnings,
      (std::vector<std::string>{
          "f.csv:1: DCGM_FI_PROF_SM_ACTIVE left out: a profiling field: only DCGM itself reads it, NVML "
          "does not give it",
          "f.csv:2: DCGM_EXP_XID_ERRORS_COUNT left out: one of dcgm-exporter's own fields, made from DCGM's "
          "health and event watches",
          "f.csv:3: DCGM_FI_DEV_BRAND left out: a DCGM field gpuctk-exporter does not read from NVML",
          "f.csv:4: MY_OWN_METRIC left out: not a DCGM field gpuctk-exporter knows",
      }));
}

TEST(MetricsCounters, FileOfOnlyUnreadableFieldsServesNothingWithWarnings) {
  const auto parsed = parse_counters("DCGM_FI_PROF_SM_ACTIVE, gauge, a\n", "f.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_TRUE(parsed->counters.empty());
  EXPECT_EQ(parsed->warnings.size(), 1u);
}

TEST(MetricsCounters, TheFirstOfTwoLinesForAFieldCounts) {
  const auto parsed = parse_counters(
      "DCGM_FI_DEV_GPU_TEMP, gauge, first\n"
      "DCGM_FI_DEV_SM_CLOCK, gauge, clock\n"
      "DCGM_FI_DEV_GPU_TEMP, counter, second\n",
      "f.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(describe(parsed->counters), (std::vector<std::string>{"DCGM_FI_DEV_GPU_TEMP, gauge, first",
                                                                  "DCGM_FI_DEV_SM_CLOCK, gauge, clock"}));
  EXPECT_EQ(parsed->warnings,
            std::vector<std::string>{"f.csv:3: DCGM_FI_DEV_GPU_TEMP named again: the first line counts"});
}

TEST(MetricsCounters, TypesThatDoNotFitTheField) {
  const auto parsed = parse_counters(
      "DCGM_FI_DEV_GPU_TEMP, counter, kept as a counter\n"
      "DCGM_FI_DEV_SM_CLOCK, label, a number as a label\n"
      "DCGM_FI_DRIVER_VERSION, gauge, a label as a number\n"
      "DCGM_FI_PROF_PCIE_TX_BYTES, counter, as the file's commented line has it\n",
      "f.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(describe(parsed->counters),
            (std::vector<std::string>{
                "DCGM_FI_DEV_GPU_TEMP, counter, kept as a counter",
                "DCGM_FI_PROF_PCIE_TX_BYTES, counter, as the file's commented line has it",
            }));
  EXPECT_EQ(parsed->warnings,
            (std::vector<std::string>{
                "f.csv:1: DCGM_FI_DEV_GPU_TEMP is a gauge in DCGM; the file's counter is used",
                "f.csv:2: DCGM_FI_DEV_SM_CLOCK is a gauge, not a label: left out",
                "f.csv:3: DCGM_FI_DRIVER_VERSION is a label, not a gauge: left out",
                "f.csv:4: DCGM_FI_PROF_PCIE_TX_BYTES is a gauge in DCGM; the file's counter is used",
            }));
}

// ---- parse_counters: files that cannot be counters files

std::string error_of(std::string_view text) {
  const auto parsed = parse_counters(text, "bad.csv");
  return parsed ? "parsed" : parsed.error().message;
}

TEST(MetricsCounters, RefusesAnUnknownType) {
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_SM_CLOCK, histogram, h\n"),
            "bad.csv:2: type \"histogram\": want gauge, counter or label");
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, Gauge, t\n"),
            "bad.csv:1: type \"Gauge\": want gauge, counter or label");
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, , t\n"), "bad.csv:1: type \"\": want gauge, counter or label");
}

TEST(MetricsCounters, RefusesOddNames) {
  EXPECT_EQ(error_of("dcgm_fi_dev_gpu_temp, gauge, t\n"),
            "bad.csv:1: field name \"dcgm_fi_dev_gpu_temp\": want [A-Z0-9_]+");
  EXPECT_EQ(error_of("DCGM FI, gauge, t\n"), "bad.csv:1: field name \"DCGM FI\": want [A-Z0-9_]+");
  EXPECT_EQ(error_of(", gauge, t\n"), "bad.csv:1: field name \"\": want [A-Z0-9_]+");
  EXPECT_EQ(error_of("DCGM-\"X\\, gauge, t\n"), "bad.csv:1: field name \"DCGM-\\\"X\\\\\": want [A-Z0-9_]+");
  EXPECT_EQ(error_of("DCGM_\xC3\xA9, gauge, t\n"),
            "bad.csv:1: field name \"DCGM_\\xc3\\xa9\": want [A-Z0-9_]+");
}

TEST(MetricsCounters, RefusesALineWithoutTwoCommas) {
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP gauge temperature\n"),
            "bad.csv:1: want \"FIELD, type, help\", got \"DCGM_FI_DEV_GPU_TEMP gauge temperature\"");
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, gauge\n"),
            "bad.csv:1: want \"FIELD, type, help\", got \"DCGM_FI_DEV_GPU_TEMP, gauge\"");
}

TEST(MetricsCounters, RefusesAFileWithoutAMetric) {
  EXPECT_EQ(error_of(""), "bad.csv: no gauge or counter: not a counters file");
  EXPECT_EQ(error_of("# only\n\n# comments\n"), "bad.csv: no gauge or counter: not a counters file");
  EXPECT_EQ(error_of("DCGM_FI_DRIVER_VERSION, label, Driver Version\n"),
            "bad.csv: no gauge or counter: not a counters file");
}

TEST(MetricsCounters, RefusesNulAndJunkBytes) {
  using namespace std::string_literals;
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_SM_CLOCK, gauge, a\0b\n"s),
            "bad.csv:2: a NUL byte: not a counters file");
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, gauge, t\xFF\xFE\n"),
            "bad.csv:1: a control character or bytes that are not UTF-8: not a counters file");
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, gauge, \x1B[2J\n"),
            "bad.csv:1: a control character or bytes that are not UTF-8: not a counters file");
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, gauge, bare\rCR\n"),
            "bad.csv:1: a control character or bytes that are not UTF-8: not a counters file");
  EXPECT_EQ(error_of("DCGM_FI_DEV_GPU_TEMP, gauge, \xED\xA0\x80 a surrogate\n"),
            "bad.csv:1: a control character or bytes that are not UTF-8: not a counters file");
  // Binary junk: whatever its first line, it is not text.
  std::string junk;
  for (int i = 0; i < 4096; ++i) {
    junk.push_back(static_cast<char>((i * 7919 + 13) % 256 | 0x80));
  }
  EXPECT_EQ(error_of(junk),
            "bad.csv:1: a control character or bytes that are not UTF-8: not a counters file");
}

TEST(MetricsCounters, AcceptsUtf8AndTabsInHelp) {
  const auto parsed =
      parse_counters("DCGM_FI_DEV_GPU_TEMP, gauge, Temp\xC3\xA9rature\t(\xE2\x84\x83)\n", "f.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->counters.at(0).help, "Temp\xC3\xA9rature\t(\xE2\x84\x83)");
}

TEST(MetricsCounters, RefusesHugeFilesAndLines) {
  const std::string line = "DCGM_FI_DEV_GPU_TEMP, gauge, t\n";
  std::string huge;
  while (huge.size() <= 1024 * 1024) {
    huge += "# padding padding padding padding padding padding padding padding padding padding\n";
  }
  EXPECT_EQ(error_of(line + huge), "bad.csv: " + std::to_string(line.size() + huge.size()) +
                                       " bytes: a counters file has at most 1 MiB");
  std::string many;
  for (int i = 0; i < 10000; ++i) {
    many += "#\n";
  }
  EXPECT_EQ(error_of(line + many), "bad.csv: 10001 lines: a counters file has at most 4096");
  const std::string one_mib_line = "DCGM_FI_DEV_GPU_TEMP, gauge, " + std::string(1024 * 1024 - 40, 'x');
  EXPECT_EQ(error_of(one_mib_line),
            "bad.csv:1: a line of " + std::to_string(one_mib_line.size()) + " bytes: at most 4096");
  // The bounds themselves are fine: 4096 lines, a line of 4096 bytes.
  std::string at_bound = "DCGM_FI_DEV_GPU_TEMP, gauge, " + std::string(4096 - 29, 'x') + "\n";
  ASSERT_EQ(at_bound.size(), 4097u);
  for (int i = 1; i < 4096; ++i) {
    at_bound += "#\n";
  }
  EXPECT_EQ(error_of(at_bound), "parsed");
  EXPECT_EQ(error_of(at_bound + "#\n"), "bad.csv: 4097 lines: a counters file has at most 4096");
}

TEST(MetricsCounters, EscapesTheOriginAndCutsLongTextInMessages) {
  const auto parsed = parse_counters("DCGM_FI_DEV_GPU_TEMP, histogram\x1B, t\n", "/etc/x\nforged");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message,
            "/etc/x\\nforged:1: a control character or bytes that are not UTF-8: not a counters file");
  const std::string long_type(3000, 'h');
  const auto cut = parse_counters("DCGM_FI_DEV_GPU_TEMP, " + long_type + ", t\n", "f.csv");
  ASSERT_FALSE(cut);
  EXPECT_LT(cut.error().message.size(), 300u) << cut.error().message;
  EXPECT_TRUE(cut.error().message.starts_with("f.csv:1: type \"hhhh")) << cut.error().message;
}

}  // namespace
}  // namespace gpuctk::metrics
