#include "inject/container_label.hpp"

#include <string_view>

#include <nlohmann/json.hpp>

namespace gpuctk::inject {

namespace {

using Json = nlohmann::ordered_json;

// The annotations each Kubernetes engine puts on a container's config.json, one row per engine.
struct CriKeys {
  const char* namespace_key;
  const char* pod_key;
  const char* container_key;
};
constexpr CriKeys k_cri_keys[] = {
    // CRI-O (and podman's kube play)
    {"io.kubernetes.pod.namespace", "io.kubernetes.pod.name", "io.kubernetes.container.name"},
    // containerd's CRI plugin
    {"io.kubernetes.cri.sandbox-namespace", "io.kubernetes.cri.sandbox-name",
     "io.kubernetes.cri.container-name"},
};

// The string at `key` of `object`, cut at k_max_label_part bytes; "" when missing or not a string.
std::string text_at(const Json& object, const char* key) {
  if (!object.is_object()) {
    return {};
  }
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return {};
  }
  const auto& value = it->get_ref<const std::string&>();
  return value.substr(0, k_max_label_part);
}

}  // namespace

std::string container_label(const nlohmann::ordered_json& config) {
  const Json empty = Json::object();
  const auto it = config.is_object() ? config.find("annotations") : config.end();
  const Json& annotations = it != config.end() ? *it : empty;
  for (const auto& keys : k_cri_keys) {
    const std::string pod = text_at(annotations, keys.pod_key);
    if (pod.empty()) {
      continue;
    }
    const std::string container = text_at(annotations, keys.container_key);
    const std::string ns = text_at(annotations, keys.namespace_key);
    return "container " + (container.empty() ? std::string("(unnamed)") : container) + " of pod " +
           (ns.empty() ? pod : ns + "/" + pod);
  }
  const std::string hostname = text_at(config, "hostname");
  return hostname.empty() ? std::string("container without hostname") : "container with hostname " + hostname;
}

}  // namespace gpuctk::inject
