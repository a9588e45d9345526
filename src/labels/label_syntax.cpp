// Kubernetes' label syntax (drop_invalid) and the two output formats (format_nfd, format_json).
#include <algorithm>

#include <nlohmann/json.hpp>

#include "labels/labels.hpp"
#include "util/k8s_names.hpp"
#include "util/strings.hpp"

namespace gpuctk::labels {

namespace {

bool is_label_name(std::string_view name) {
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  return !name.empty() && name.size() <= 63 && alnum(name.front()) && alnum(name.back()) &&
         std::ranges::all_of(name, [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_label_key(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) {
    return is_label_name(key);
  }
  return is_dns_subdomain(key.substr(0, slash)) && is_label_name(key.substr(slash + 1));
}

bool is_label_value(std::string_view value) {
  return value.empty() || is_label_name(value);
}

}  // namespace

void drop_invalid(Labels& labels, std::vector<std::string>& warnings) {
  for (auto it = labels.begin(); it != labels.end();) {
    if (!is_label_key(it->first)) {
      warnings.push_back("label " + quote(it->first) + " left out: not a valid label name");
      it = labels.erase(it);
    } else if (!is_label_value(it->second)) {
      warnings.push_back("label " + it->first + " left out: " + quote(it->second) +
                         " is not a valid label value");
      it = labels.erase(it);
    } else {
      ++it;
    }
  }
}

std::string format_nfd(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) {
    out += key;
    out += '=';
    out += value;
    out += '\n';
  }
  return out;
}

std::string format_json(const Labels& labels) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto& [key, value] : labels) {
    object[key] = value;
  }
  return object.dump(2) + "\n";
}

}  // namespace gpuctk::labels
