#include "metrics/exposition.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string_view>

#include "util/utf8.hpp"

namespace gpuctk::metrics {

namespace {

enum class Escape {
  help,   // a HELP text: backslash and line feed
  label,  // a label value: those and the double quote
};

bool needs_escape(char c, Escape kind) {
  const auto byte = static_cast<unsigned char>(c);
  return c == '\\' || c == '\n' || (c == '"' && kind == Escape::label) || byte >= 0x80;
}

// `text` as the exposition format wants it; bytes that are not UTF-8 become U+FFFD, since the format is
// UTF-8 and a scraper refuses the whole page for one bad byte. Most text needs nothing: one scan, one
// append.
void append_escaped(std::string_view text, Escape kind, std::string& out) {
  if (std::ranges::none_of(text, [kind](char c) { return needs_escape(c, kind); })) {
    out.append(text);
    return;
  }
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at];
    char32_t code_point = 0;
    const std::size_t length =
        static_cast<unsigned char>(c) < 0x80 ? 1 : utf8_sequence_length(text.substr(at), code_point);
    if (length == 0) {
      out.append("\xEF\xBF\xBD");
      ++at;
      continue;
    }
    if (c == '\\') {
      out.append("\\\\");
    } else if (c == '\n') {
      out.append("\\n");
    } else if (c == '"' && kind == Escape::label) {
      out.append("\\\"");
    } else {
      out.append(text.substr(at, length));
    }
    at += length;
  }
}

void append_label(std::string_view name, std::string_view value, std::string& out) {
  out.append(name).append("=\"");
  append_escaped(value, Escape::label, out);
  out.push_back('"');
}

template <class Number>
void append_integer(Number number, std::string& out) {
  char buffer[24];
  const auto result = std::to_chars(std::begin(buffer), std::end(buffer), number);
  out.append(std::begin(buffer), result.ptr);
}

// Room for any double's or int64's shortest text ("-2.2250738585072014e-308": 24 bytes).
using NumberText = std::array<char, 32>;

// An integer field's value without a fraction (DCGM's int64 fields print so), anything else as the
// shortest text that reads back as the same double; written into `buffer`, which the view points into.
std::string_view format_value(double value, bool integer, NumberText& buffer) {
  constexpr double k_int64_bound = 9223372036854775807.0;
  const auto result = integer && value == std::floor(value) && std::fabs(value) < k_int64_bound
                          ? std::to_chars(buffer.begin(), buffer.end(), static_cast<int64_t>(value))
                          : std::to_chars(buffer.begin(), buffer.end(), value);
  return {buffer.data(), result.ptr};
}

// The value a `label` counter puts on every line, "" when unknown (then no label, as dcgm-exporter leaves
// out a blank one).
std::string_view label_value(const Field& field, const Collection& collection) {
  if (field.name == "DCGM_FI_DRIVER_VERSION") {
    return collection.driver_version;
  }
  return {};
}

// The labels every line of one device starts with, the `label` counters' included: made once per device
// and render, then copied into each of its lines.
class DeviceLabels {
 public:
  DeviceLabels(const std::vector<Counter>& counters, const Collection& collection) {
    std::vector<std::pair<std::string_view, std::string_view>> labels;
    for (const auto& counter : counters) {
      if (counter.type == MetricType::label && counter.field != nullptr) {
        const auto value = label_value(*counter.field, collection);
        if (!value.empty()) {
          labels.emplace_back(counter.field->name, value);
        }
      }
    }
    std::ranges::sort(labels);  // dcgm-exporter ranges over a map: sorted by name
    m_ends.reserve(collection.devices.size());
    for (const auto& device : collection.devices) {
      append_device(device, collection.hostname, labels);
      m_ends.push_back(m_text.size());
    }
  }

  [[nodiscard]] std::string_view of(std::size_t device) const {
    const std::size_t begin = device == 0 ? 0 : m_ends[device - 1];
    return std::string_view(m_text).substr(begin, m_ends[device] - begin);
  }

 private:
  void append_device(const DeviceReading& device, std::string_view hostname,
                     const std::vector<std::pair<std::string_view, std::string_view>>& labels) {
    m_text.append("gpu=\"");
    append_integer(device.gpu, m_text);
    m_text.append("\",");
    append_label("UUID", device.uuid, m_text);
    append_label(",pci_bus_id", device.pci_bus_id, m_text);
    append_label(",device", device.device, m_text);
    append_label(",modelName", device.model_name, m_text);
    if (device.gpu_instance_id) {
      append_label(",GPU_I_PROFILE", device.gpu_instance_profile, m_text);
      m_text.append(",GPU_I_ID=\"");
      append_integer(*device.gpu_instance_id, m_text);
      m_text.push_back('"');
    }
    if (!hostname.empty()) {
      append_label(",Hostname", hostname, m_text);
    }
    for (const auto& [name, value] : labels) {
      m_text.push_back(',');
      append_label(name, value, m_text);
    }
  }

  std::string m_text;
  std::vector<std::size_t> m_ends;  // where each device's labels end in m_text
};

// One line: the device's labels, then the attributes in name order (container, err_code, namespace,
// pod), then the value.
void append_line(std::string_view name, std::string_view labels, const Holder* holder,
                 std::string_view err_code, std::string_view value, std::string& out) {
  out.append(name).push_back('{');
  out.append(labels);
  if (holder != nullptr) {
    append_label(",container", holder->container, out);
  }
  if (!err_code.empty()) {
    out.append(",err_code=\"").append(err_code).push_back('"');
  }
  if (holder != nullptr) {
    append_label(",namespace", holder->namespace_name, out);
    append_label(",pod", holder->pod, out);
  }
  out.append("} ").append(value).push_back('\n');
}

// Every line of one device for one counter: one per holder, or one without pod labels.
void append_device_lines(const Counter& counter, const DeviceReading& device, std::string_view labels,
                         double value, std::string& out) {
  NumberText buffer;
  const std::string_view number = format_value(value, counter.field->integer, buffer);
  // DCGM_FI_DEV_XID_ERRORS names its Xid in err_code too (dcgm-exporter's attribute).
  const std::string_view err_code = counter.field->name == "DCGM_FI_DEV_XID_ERRORS" ? number : "";
  if (device.holders.empty()) {
    append_line(counter.field->name, labels, nullptr, err_code, number, out);
  }
  for (const auto& holder : device.holders) {
    append_line(counter.field->name, labels, &holder, err_code, number, out);
  }
}

void append_counter(const Counter& counter, const Collection& collection, const DeviceLabels& labels,
                    std::string& out) {
  const std::size_t start = out.size();
  out.append("# HELP ").append(counter.field->name).push_back(' ');
  append_escaped(counter.help, Escape::help, out);
  out.append("\n# TYPE ").append(counter.field->name).push_back(' ');
  out.append(counter.type == MetricType::counter ? "counter" : "gauge").push_back('\n');
  const std::size_t header_end = out.size();
  for (std::size_t i = 0; i < collection.devices.size(); ++i) {
    const auto value = counter.field->value(collection.devices[i]);
    if (value && std::isfinite(*value)) {
      append_device_lines(counter, collection.devices[i], labels.of(i), *value, out);
    }
  }
  if (out.size() == header_end) {
    out.resize(start);  // no device has a value: no HELP and TYPE without a sample
  }
}

}  // namespace

void render(const std::vector<Counter>& counters, const Collection& collection, std::string& out) {
  out.clear();
  const DeviceLabels labels(counters, collection);
  for (const auto& counter : counters) {
    if (counter.type != MetricType::label && counter.field != nullptr && counter.field->value != nullptr) {
      append_counter(counter, collection, labels, out);
    }
  }
}

}  // namespace gpuctk::metrics
