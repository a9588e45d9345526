#include "dra/claims.hpp"

#include <algorithm>
#include <optional>

#include "util/k8s_names.hpp"
#include "util/strings.hpp"

namespace gpuctk::dra {

namespace {

using nlohmann::json;

// The longest values the API server lets through (resource.k8s.io/v1 and metadata validation); a longer
// one is refused before it is compared or copied.
constexpr size_t k_max_uid = 36;
constexpr size_t k_max_label = 63;     // a namespace, a device name, a request name
constexpr size_t k_max_request = 127;  // "<request>/<subrequest>"
constexpr size_t k_max_driver = 253;   // a DNS subdomain, like a pool name and a node name
constexpr size_t k_max_pool = 253;

// Whether `name` is a DNS-1123 label: [a-z0-9-], at most 63, beginning and ending with a letter or digit.
bool is_dns_label(std::string_view name) {
  return name.size() <= k_max_label && is_dns_subdomain(name) && name.find('.') == std::string_view::npos;
}

// A request name as DeviceRequestAllocationResult holds it: a DNS label, or two joined by "/".
bool is_request_name(std::string_view name) {
  const auto parts = split(name, '/');
  return name.size() <= k_max_request && parts.size() <= 2 && std::ranges::all_of(parts, is_dns_label);
}

// The member `key` of the object `object`; nullptr when absent or null (as Go's decoder reads null).
const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

// The object at `key` of `object`; nullptr when absent; an error when it is not an object.
Result<const json*> object_at(const json& object, const char* key, const std::string& where) {
  const json* value = member(object, key);
  if (value != nullptr && !value->is_object()) {
    return fail(where + ": expected an object");
  }
  return value;
}

// The string at `key` of `object`, at most `max_size` bytes; "" when absent.
Result<std::string_view> string_at(const json& object, const char* key, const std::string& where,
                                   size_t max_size) {
  const json* value = member(object, key);
  if (value == nullptr) {
    return std::string_view{};
  }
  if (!value->is_string()) {
    return fail(where + ": expected a string");
  }
  const auto& text = value->get_ref<const std::string&>();
  if (text.size() > max_size) {
    return fail(where + ": longer than " + std::to_string(max_size) + " bytes");
  }
  return std::string_view(text);
}

// The array at `key` of `object`; an empty array when absent.
Result<const json*> array_at(const json& object, const char* key, const std::string& where) {
  static const json empty = json::array();
  const json* value = member(object, key);
  if (value == nullptr) {
    return &empty;
  }
  if (!value->is_array()) {
    return fail(where + ": expected a list");
  }
  return value;
}

// A metadata field must be what the kubelet named: another UID is another claim under the same name.
Result<void> check_metadata(const json& claim, const ClaimRef& ref) {
  GPUCTK_TRY_ASSIGN(const json* metadata, object_at(claim, "metadata", "metadata"));
  if (metadata == nullptr) {
    return fail("metadata: missing");
  }
  GPUCTK_TRY_ASSIGN(const auto uid, string_at(*metadata, "uid", "metadata.uid", k_max_uid));
  if (uid != ref.uid) {
    return fail("claim uid " + quote(uid) + " is not the UID the kubelet named (" + quote(ref.uid) +
                "): the claim was deleted and made again");
  }
  GPUCTK_TRY_ASSIGN(const auto ns, string_at(*metadata, "namespace", "metadata.namespace", k_max_label));
  if (ns != ref.namespace_name) {
    return fail("claim namespace " + quote(ns) + " is not the one the kubelet named (" +
                quote(ref.namespace_name) + ")");
  }
  GPUCTK_TRY_ASSIGN(const auto name, string_at(*metadata, "name", "metadata.name", k_max_dns_subdomain));
  if (name != ref.name) {
    return fail("claim name " + quote(name) + " is not the one the kubelet named (" + quote(ref.name) + ")");
  }
  return {};
}

// What a node selector term says about this node: it selects it, it does not, or it needs the node's
// labels (matchExpressions), which the plugin cannot evaluate.
enum class Selects : uint8_t { yes, no, unknown };

// One matchFields requirement on this node: metadata.name with In or NotIn, as Kubernetes allows them.
Result<bool> field_matches(const json& requirement, std::string_view node_name, const std::string& where) {
  if (!requirement.is_object()) {
    return fail(where + ": expected an object");
  }
  GPUCTK_TRY_ASSIGN(const auto key, string_at(requirement, "key", where + ".key", k_max_driver));
  GPUCTK_TRY_ASSIGN(const auto op, string_at(requirement, "operator", where + ".operator", k_max_label));
  GPUCTK_TRY_ASSIGN(const json* values, array_at(requirement, "values", where + ".values"));
  if (key != "metadata.name") {
    return fail(where + ": cannot evaluate the field " + quote(key) + " (only metadata.name)");
  }
  if (op != "In" && op != "NotIn") {
    return fail(where + ": cannot evaluate the operator " + quote(op) + " (only In and NotIn)");
  }
  bool listed = false;
  for (const auto& value : *values) {
    if (!value.is_string()) {
      return fail(where + ".values: expected strings");
    }
    listed = listed || value.get_ref<const std::string&>() == node_name;
  }
  return op == "In" ? listed : !listed;
}

// One term: its requirements ANDed; an empty term selects nothing (Kubernetes' rule).
Result<Selects> term_selects(const json& term, std::string_view node_name, const std::string& where) {
  if (!term.is_object()) {
    return fail(where + ": expected an object");
  }
  GPUCTK_TRY_ASSIGN(const json* fields, array_at(term, "matchFields", where + ".matchFields"));
  GPUCTK_TRY_ASSIGN(const json* expressions, array_at(term, "matchExpressions", where + ".matchExpressions"));
  if (fields->empty() && expressions->empty()) {
    return Selects::no;
  }
  for (size_t i = 0; i < fields->size(); ++i) {
    GPUCTK_TRY_ASSIGN(const bool matches, field_matches((*fields)[i], node_name,
                                                        where + ".matchFields[" + std::to_string(i) + "]"));
    if (!matches) {
      return Selects::no;  // false whatever the labels say
    }
  }
  return expressions->empty() ? Selects::yes : Selects::unknown;
}

// Whether the allocation's node selector selects this node; success when there is none.
Result<void> check_node_selector(const json& allocation, std::string_view node_name) {
  const std::string where = "status.allocation.nodeSelector";
  GPUCTK_TRY_ASSIGN(const json* selector, object_at(allocation, "nodeSelector", where));
  if (selector == nullptr) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(const json* terms,
                    array_at(*selector, "nodeSelectorTerms", where + ".nodeSelectorTerms"));
  bool unknown = false;
  for (size_t i = 0; i < terms->size(); ++i) {
    GPUCTK_TRY_ASSIGN(
        const auto selects,
        term_selects((*terms)[i], node_name, where + ".nodeSelectorTerms[" + std::to_string(i) + "]"));
    if (selects == Selects::yes) {
      return {};
    }
    unknown = unknown || selects == Selects::unknown;
  }
  if (unknown) {
    return fail("node selector: cannot evaluate matchExpressions (node labels) for node " + quote(node_name));
  }
  return fail("allocated for another node (its node selector does not select " + quote(node_name) + ")");
}

// The result `i` as an AllocatedDevice when it is `driver`'s in `pool`; nullopt for another's.
Result<std::optional<AllocatedDevice>> result_of(const json& result, size_t i, std::string_view pool,
                                                 std::string_view driver) {
  const std::string where = "status.allocation.devices.results[" + std::to_string(i) + "]";
  if (!result.is_object()) {
    return fail(where + ": expected an object");
  }
  GPUCTK_TRY_ASSIGN(const auto result_driver, string_at(result, "driver", where + ".driver", k_max_driver));
  GPUCTK_TRY_ASSIGN(const auto result_pool, string_at(result, "pool", where + ".pool", k_max_pool));
  if (result_driver != driver || result_pool != pool) {
    return std::nullopt;
  }
  GPUCTK_TRY_ASSIGN(const auto request, string_at(result, "request", where + ".request", k_max_request));
  GPUCTK_TRY_ASSIGN(const auto device, string_at(result, "device", where + ".device", k_max_label));
  if (!is_request_name(request)) {
    return fail(where + ".request: " + quote(request) + " is not a request name");
  }
  if (!is_dns_label(device)) {
    return fail(where + ".device: " + quote(device) + " is not a DNS label");
  }
  return AllocatedDevice{std::string(request), std::string(result_pool), std::string(device)};
}

}  // namespace

Result<void> check_claim_uid(std::string_view uid) {
  const auto is_hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  };
  bool ok = uid.size() == k_max_uid;
  for (size_t i = 0; ok && i < uid.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    ok = dash ? uid[i] == '-' : is_hex(uid[i]);
  }
  if (!ok) {
    return fail("claim uid " + quote(uid) + " is not a UID (want 8-4-4-4-12 hexadecimal digits)");
  }
  return {};
}

Result<void> check_claim_ref(const ClaimRef& ref) {
  GPUCTK_TRY(check_claim_uid(ref.uid));
  if (!is_dns_label(ref.namespace_name)) {
    return fail("claim namespace " + quote(ref.namespace_name) + " is not a DNS label");
  }
  if (!is_dns_subdomain(ref.name)) {
    return fail("claim name " + quote(ref.name) + " is not a DNS subdomain");
  }
  return {};
}

std::string claim_text(const ClaimRef& ref) {
  return ref.namespace_name + "/" + ref.name;
}

Result<std::vector<AllocatedDevice>> allocated_devices(const json& claim, const ClaimRef& ref,
                                                       std::string_view node_name, std::string_view driver) {
  if (!claim.is_object()) {
    return fail("claim: expected an object");
  }
  GPUCTK_TRY(check_metadata(claim, ref));
  GPUCTK_TRY_ASSIGN(const json* status, object_at(claim, "status", "status"));
  const json* allocation = nullptr;
  if (status != nullptr) {
    GPUCTK_TRY_ASSIGN(allocation, object_at(*status, "allocation", "status.allocation"));
  }
  if (allocation == nullptr) {
    return fail("not allocated");
  }
  GPUCTK_TRY(check_node_selector(*allocation, node_name));
  GPUCTK_TRY_ASSIGN(const json* devices, object_at(*allocation, "devices", "status.allocation.devices"));
  static const json none = json::object();
  GPUCTK_TRY_ASSIGN(const json* results, array_at(devices != nullptr ? *devices : none, "results",
                                                  "status.allocation.devices.results"));
  if (results->size() > k_max_allocation_results) {
    return fail("more than " + std::to_string(k_max_allocation_results) + " allocation results (" +
                std::to_string(results->size()) + ")");
  }
  std::vector<AllocatedDevice> ours;
  for (size_t i = 0; i < results->size(); ++i) {
    GPUCTK_TRY_ASSIGN(auto device, result_of((*results)[i], i, node_name, driver));
    if (device) {
      ours.push_back(std::move(*device));
    }
  }
  if (ours.empty()) {
    return fail("no device of driver " + std::string(driver) + " in this node's pool");
  }
  return ours;
}

}  // namespace gpuctk::dra
