#pragma once
// The metrics gpuctk-exporter serves, under dcgm-exporter's names (DCGM's field names): which DCGM fields
// it can read from NVML, and the counters file that chooses among them (dcgm-exporter's `-f/--collectors`
// format, so an existing configuration carries over):
//
//   # comment
//   DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
//   DCGM_FI_DRIVER_VERSION, label, Driver Version
//
// One line per field: the DCGM field name, its Prometheus type (gauge, counter, or label: the value becomes
// a label on every other metric), and the HELP text (the rest of the line, commas included). Spaces around
// each part are trimmed.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "discover/nvml.hpp"
#include "util/error.hpp"

namespace gpuctk::metrics {

enum class MetricType { gauge, counter, label };

struct DeviceReading;  // exposition.hpp: one device's sample and what the exporter keeps beside it (last Xid)

// A DCGM field gpuctk-exporter can read from NVML, and how: `value` takes one device's reading and gives
// the metric's value in DCGM's unit (MiB, W, mJ, MHz, …), nullopt when the reading is absent. It takes the
// whole reading, not only its NvmlSample: DCGM_FI_DEV_XID_ERRORS comes from the events the exporter
// watched (DeviceReading::last_xid), not from one sample.
struct Field {
  std::string_view name;  // "DCGM_FI_DEV_GPU_TEMP"
  MetricType type;        // DCGM's own type for it, what dcgm-exporter's default file says
  std::optional<double> (*value)(const DeviceReading& reading);
  // The number as text in the exposition: integers print without a fraction, as DCGM's integer fields do.
  bool integer;
};

// Every field gpuctk-exporter can read (labels such as DCGM_FI_DRIVER_VERSION included, with value null),
// in a fixed order; nullptr for a name it does not know.
const Field* find_field(std::string_view name);
const std::vector<Field>& all_fields();

// One line of a counters file: the field, the type the file gives it and its HELP text.
struct Counter {
  const Field* field = nullptr;
  MetricType type = MetricType::gauge;
  std::string help;
};

struct Counters {
  std::vector<Counter> counters;  // file order, each field at most once
  // One line each, "<origin>:<line>: …": a field gpuctk-exporter cannot read from NVML (DCGM's profiling
  // fields, DCGM_FI_PROF_*, need DCGM itself), a field named twice (the first one counts), a type that
  // does not fit the field.
  std::vector<std::string> warnings;
};

// Parses a counters file. `origin` names it in messages (the path). Errors, for a file that cannot be a
// counters file at all: more than 1 MiB or 4096 lines, a line of more than 4096 bytes, a NUL byte, a
// control character other than tab or bytes that are not UTF-8 (the HELP text reaches the exposition,
// which is UTF-8 text), a line without two commas, an unknown type ("<origin>:<line>: type
// \"histogram\": want gauge, counter or label"), a name that is not [A-Z0-9_]+, no gauge or counter line
// at all. Untrusted text in messages is escaped. Lines whose first non-blank character is '#' are
// comments; CRLF line ends are accepted; a HELP text in CSV double quotes (dcgm-exporter reads the file
// as CSV) loses them ("" inside stands for one quote). A type that does not fit the field is a warning:
// gauge for a counter or the reverse keeps the file's type (dcgm-exporter takes it as written); label for
// a number, or a number for a label, leaves the line out.
Result<Counters> parse_counters(std::string_view text, std::string_view origin);

// The built-in set, used without -f: dcgm-exporter's etc/default-counters.csv, the fields of it
// gpuctk-exporter can read, with its types and HELP texts.
const Counters& default_counters();

}  // namespace gpuctk::metrics
