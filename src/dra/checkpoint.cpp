#include "dra/checkpoint.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include <nlohmann/json.hpp>

#include "dra/claims.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::dra {

namespace {

using nlohmann::json;

// The checkpoint nests 6 levels (claims, a claim, its devices, a device, its requests); deeper is not ours,
// and nlohmann would recurse through it.
constexpr int k_max_depth = 16;
// The most strings one list of a device holds (a device serves at most every request of its claim).
constexpr size_t k_max_list = 32;
constexpr size_t k_max_string = 512;

// The compact text the checksum covers: the document without its "checksum" key, keys sorted (nlohmann's
// object is a std::map), invalid UTF-8 replaced rather than thrown on.
std::string checksum_of(json document) {
  document.erase("checksum");
  return fnv1a64_hex(document.dump(-1, ' ', false, json::error_handler_t::replace));
}

json device_json(const PreparedDevice& device) {
  return json{{"requests", device.requests},
              {"pool", device.pool},
              {"device", device.device},
              {"cdiIds", device.cdi_ids}};
}

json claim_json(const PreparedClaim& claim) {
  json devices = json::array();
  for (const auto& device : claim.devices) {
    devices.push_back(device_json(device));
  }
  return json{{"namespace", claim.namespace_name}, {"name", claim.name}, {"devices", std::move(devices)}};
}

// Fails when `object` (an object) has a key that is not one of `keys`: a field this version does not
// know would be dropped when the file is written again.
Result<void> check_keys(const json& object, std::initializer_list<std::string_view> keys,
                        const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (std::ranges::find(keys, std::string_view(key)) == keys.end()) {
      return fail(where + ": unknown field " + quote(key));
    }
  }
  return {};
}

Result<const json*> typed(const json& object, const char* key, json::value_t type, std::string_view type_name,
                          const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end() || it->type() != type) {
    return fail(where + "." + key + ": expected " + std::string(type_name));
  }
  return &*it;
}

Result<std::string> string_field(const json& object, const char* key, const std::string& where) {
  GPUCTK_TRY_ASSIGN(const json* value, typed(object, key, json::value_t::string, "a string", where));
  if (value->get_ref<const std::string&>().size() > k_max_string) {
    return fail(where + "." + key + ": longer than " + std::to_string(k_max_string) + " bytes");
  }
  return value->get<std::string>();
}

Result<std::vector<std::string>> strings_field(const json& object, const char* key,
                                               const std::string& where) {
  GPUCTK_TRY_ASSIGN(const json* list, typed(object, key, json::value_t::array, "a list", where));
  if (list->size() > k_max_list) {
    return fail(where + "." + key + ": more than " + std::to_string(k_max_list) + " entries");
  }
  std::vector<std::string> out;
  for (const auto& item : *list) {
    if (!item.is_string() || item.get_ref<const std::string&>().size() > k_max_string) {
      return fail(where + "." + key + ": expected strings of at most " + std::to_string(k_max_string) +
                  " bytes");
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<PreparedDevice> parse_device(const json& object, const std::string& where) {
  if (!object.is_object()) {
    return fail(where + ": expected an object");
  }
  GPUCTK_TRY(check_keys(object, {"requests", "pool", "device", "cdiIds"}, where));
  PreparedDevice device;
  GPUCTK_TRY_ASSIGN(device.requests, strings_field(object, "requests", where));
  GPUCTK_TRY_ASSIGN(device.pool, string_field(object, "pool", where));
  GPUCTK_TRY_ASSIGN(device.device, string_field(object, "device", where));
  GPUCTK_TRY_ASSIGN(device.cdi_ids, strings_field(object, "cdiIds", where));
  return device;
}

Result<PreparedClaim> parse_claim(const std::string& uid, const json& object) {
  const std::string where = "claims[" + quote(uid) + "]";
  if (auto checked = check_claim_uid(uid); !checked) {
    return fail_with(where, checked.error());
  }
  if (!object.is_object()) {
    return fail(where + ": expected an object");
  }
  GPUCTK_TRY(check_keys(object, {"namespace", "name", "devices"}, where));
  PreparedClaim claim;
  GPUCTK_TRY_ASSIGN(claim.namespace_name, string_field(object, "namespace", where));
  GPUCTK_TRY_ASSIGN(claim.name, string_field(object, "name", where));
  GPUCTK_TRY_ASSIGN(const json* devices, typed(object, "devices", json::value_t::array, "a list", where));
  if (devices->size() > k_max_allocation_results) {
    return fail(where + ".devices: more than " + std::to_string(k_max_allocation_results) + " entries");
  }
  for (size_t i = 0; i < devices->size(); ++i) {
    GPUCTK_TRY_ASSIGN(auto device,
                      parse_device((*devices)[i], where + ".devices[" + std::to_string(i) + "]"));
    claim.devices.push_back(std::move(device));
  }
  return claim;
}

// The JSON document of `text`, at most k_max_depth deep; errors are one line from "parse error".
Result<json> parse_document(std::string_view text) {
  bool too_deep = false;
  const json::parser_callback_t limit = [&too_deep](int depth, json::parse_event_t /*event*/,
                                                    json& /*value*/) {
    too_deep = too_deep || depth > k_max_depth;
    return !too_deep;
  };
  try {
    json document = json::parse(text, limit);
    if (too_deep) {
      return fail("nested deeper than " + std::to_string(k_max_depth) + " levels");
    }
    return document;
  } catch (const json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 9: ..." -> from "parse error".
    const std::string_view what = e.what();
    const auto start = what.find("parse error");
    return fail("not JSON: " + std::string(start == std::string_view::npos ? what : what.substr(start)));
  }
}

// The version must be read before anything else: another version may lay the file out differently.
Result<void> check_version(const json& document) {
  const auto it = document.find("version");
  if (it == document.end() || !it->is_number_integer()) {
    return fail("no checkpoint version");
  }
  if (*it != k_checkpoint_version) {
    return fail("checkpoint version " + it->dump() + ", not " + std::to_string(k_checkpoint_version) +
                " (written by another gpuctk-dra-plugin)");
  }
  return {};
}

}  // namespace

std::string encode_checkpoint(const Checkpoint& checkpoint) {
  json claims = json::object();
  for (const auto& [uid, claim] : checkpoint.claims) {
    claims[uid] = claim_json(claim);
  }
  json document{{"version", k_checkpoint_version}, {"claims", std::move(claims)}};
  document["checksum"] = checksum_of(document);
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<Checkpoint> parse_checkpoint(std::string_view text) {
  GPUCTK_TRY_ASSIGN(const json document, parse_document(text));
  if (!document.is_object()) {
    return fail("expected a JSON object");
  }
  GPUCTK_TRY(check_version(document));
  GPUCTK_TRY(check_keys(document, {"version", "checksum", "claims"}, "checkpoint"));
  GPUCTK_TRY_ASSIGN(const json* checksum,
                    typed(document, "checksum", json::value_t::string, "a string", "checkpoint"));
  if (*checksum != checksum_of(document)) {
    return fail("checksum mismatch (the file was changed or cut short)");
  }
  GPUCTK_TRY_ASSIGN(const json* claims,
                    typed(document, "claims", json::value_t::object, "an object", "checkpoint"));
  Checkpoint checkpoint;
  for (const auto& [uid, object] : claims->items()) {
    GPUCTK_TRY_ASSIGN(auto claim, parse_claim(uid, object));
    checkpoint.claims.emplace(uid, std::move(claim));
  }
  return checkpoint;
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  GPUCTK_TRY_ASSIGN(const auto text, read_regular_at(AT_FDCWD, path.c_str(), path, k_max_checkpoint_bytes));
  if (!text) {
    return Checkpoint{};
  }
  auto checkpoint = parse_checkpoint(*text);
  if (!checkpoint) {
    return fail_with(path, checkpoint.error());
  }
  return checkpoint;
}

Result<void> write_checkpoint(const std::string& path, const Checkpoint& checkpoint) {
  const std::string text = encode_checkpoint(checkpoint);
  if (text.size() > k_max_checkpoint_bytes) {
    return fail("write " + path + ": checkpoint of " + std::to_string(text.size()) + " bytes, more than " +
                std::to_string(k_max_checkpoint_bytes));
  }
  // The file's content is synced, not the rename: after a power cut the older checkpoint is as good (the
  // claims it names are prepared again as their pods restart), but an empty one would stop the start.
  return write_file_atomic(path, text, 0600, Durability::content);
}

}  // namespace gpuctk::dra
