#include "engine/replaced.hpp"

#include <algorithm>

#include "engine/json_doc.hpp"

namespace gpuctk::engine {

namespace {

using detail::Json;

Error not_a_record(std::string_view path, std::string_view want) {
  return Error{"not a record of gpuctk's (" + std::string(path) + " is not " + std::string(want) + ")"};
}

// A string, or null for "absent".
Result<std::optional<std::string>> optional_string(const Json& value, std::string_view path) {
  if (value.is_null()) {
    return std::optional<std::string>();
  }
  if (!value.is_string()) {
    return std::unexpected(not_a_record(path, "a string or null"));
  }
  return std::optional<std::string>(value.get<std::string>());
}

Json optional_json(const std::optional<std::string>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// The member `key` of `object` with the type `is` checks, or an error naming `path`.
Result<const Json*> member(const Json& object, const std::string& key, bool (Json::*is)() const noexcept,
                           std::string_view path, std::string_view want) {
  const auto found = object.find(key);
  if (found == object.end() || !((*found).*is)()) {
    return std::unexpected(not_a_record(std::string(path) + "." + key, want));
  }
  return &*found;
}

Result<ReplacedKey> parse_key(const Json& item, const std::string& path) {
  if (!item.is_object()) {
    return std::unexpected(not_a_record(path, "an object"));
  }
  ReplacedKey key;
  GPUCTK_TRY_ASSIGN(const Json* parts, member(item, "key", &Json::is_array, path, "an array"));
  for (const Json& part : *parts) {
    if (!part.is_string()) {
      return std::unexpected(not_a_record(path + ".key", "an array of strings"));
    }
    key.key.push_back(part.get<std::string>());
  }
  if (key.key.empty()) {
    return std::unexpected(not_a_record(path + ".key", "a non-empty array"));
  }
  const auto was = item.find("was");
  GPUCTK_TRY_ASSIGN(key.was, optional_string(was == item.end() ? Json(nullptr) : *was, path + ".was"));
  return key;
}

Result<ReplacedRuntime> parse_runtime(const Json& value, const std::string& path) {
  if (!value.is_object()) {
    return std::unexpected(not_a_record(path, "an object"));
  }
  ReplacedRuntime runtime;
  GPUCTK_TRY_ASSIGN(const Json* created, member(value, "created", &Json::is_boolean, path, "a boolean"));
  runtime.created = created->get<bool>();
  GPUCTK_TRY_ASSIGN(const Json* binary, member(value, "binary", &Json::is_string, path, "a string"));
  runtime.binary = binary->get<std::string>();
  if (const auto keys = value.find("keys"); keys != value.end()) {
    if (!keys->is_array()) {
      return std::unexpected(not_a_record(path + ".keys", "an array"));
    }
    for (size_t i = 0; i < keys->size(); ++i) {
      GPUCTK_TRY_ASSIGN(ReplacedKey key, parse_key((*keys)[i], path + ".keys[" + std::to_string(i) + "]"));
      runtime.keys.push_back(std::move(key));
    }
  }
  return runtime;
}

}  // namespace

Result<Replaced> parse_replaced(std::string_view text) {
  GPUCTK_TRY_ASSIGN(const Json doc, detail::parse_json_object(text));
  Replaced replaced;
  if (const auto runtimes = doc.find("runtimes"); runtimes != doc.end()) {
    if (!runtimes->is_object()) {
      return std::unexpected(not_a_record("runtimes", "an object"));
    }
    for (const auto& [name, value] : runtimes->items()) {
      GPUCTK_TRY_ASSIGN(ReplacedRuntime runtime, parse_runtime(value, "runtimes." + name));
      replaced.runtimes.emplace(name, std::move(runtime));
    }
  }
  if (const auto found = doc.find("default_runtime"); found != doc.end()) {
    if (!found->is_object()) {
      return std::unexpected(not_a_record("default_runtime", "an object"));
    }
    GPUCTK_TRY_ASSIGN(const Json* set,
                      member(*found, "set", &Json::is_string, "default_runtime", "a string"));
    const auto was = found->find("was");
    GPUCTK_TRY_ASSIGN(auto was_value,
                      optional_string(was == found->end() ? Json(nullptr) : *was, "default_runtime.was"));
    replaced.default_runtime = ReplacedDefault{.set = set->get<std::string>(), .was = std::move(was_value)};
  }
  return replaced;
}

std::string print_replaced(const Replaced& replaced) {
  Json doc = Json::object();
  if (!replaced.runtimes.empty()) {
    Json& runtimes = doc["runtimes"] = Json::object();
    for (const auto& [name, runtime] : replaced.runtimes) {
      Json keys = Json::array();
      for (const ReplacedKey& key : runtime.keys) {
        keys.push_back(Json{{"key", key.key}, {"was", optional_json(key.was)}});
      }
      runtimes[name] =
          Json{{"created", runtime.created}, {"binary", runtime.binary}, {"keys", std::move(keys)}};
    }
  }
  if (replaced.default_runtime) {
    doc["default_runtime"] =
        Json{{"set", replaced.default_runtime->set}, {"was", optional_json(replaced.default_runtime->was)}};
  }
  // Every string came from a config file that parsed, or from checked settings: valid UTF-8, except
  // what toml++ let through; `replace` keeps the dump from throwing on that.
  return doc.dump(4, ' ', false, Json::error_handler_t::replace) + "\n";
}

void note_runtime(Replaced& replaced, const std::string& name, const std::string& binary,
                  const std::optional<std::string>& binary_before, std::vector<ReplacedKey> changed) {
  const auto found = replaced.runtimes.find(name);
  if (!binary_before) {
    // gpuctk makes the entry.
    replaced.runtimes.insert_or_assign(name, ReplacedRuntime{.created = true, .binary = binary, .keys = {}});
    return;
  }
  if (found == replaced.runtimes.end()) {
    if (*binary_before == binary) {
      // gpuctk's entry from before the record, or written by hand for gpuctk: deleted as it always was.
      replaced.runtimes.emplace(name, ReplacedRuntime{.created = true, .binary = binary, .keys = {}});
    } else {
      replaced.runtimes.emplace(
          name, ReplacedRuntime{.created = false, .binary = binary, .keys = std::move(changed)});
    }
    return;
  }
  ReplacedRuntime& runtime = found->second;
  if (*binary_before != runtime.binary) {
    // Someone pointed it elsewhere since gpuctk wrote it: that is what gpuctk takes over now.
    runtime = ReplacedRuntime{.created = false, .binary = binary, .keys = std::move(changed)};
    return;
  }
  // Still gpuctk's: the earliest value of each key is the one to put back.
  runtime.binary = binary;
  if (runtime.created) {
    return;
  }
  for (ReplacedKey& key : changed) {
    if (std::ranges::none_of(runtime.keys, [&](const ReplacedKey& known) { return known.key == key.key; })) {
      runtime.keys.push_back(std::move(key));
    }
  }
}

void note_default(Replaced& replaced, const std::string& name, const std::optional<std::string>& was) {
  replaced.default_runtime = ReplacedDefault{.set = name, .was = was};
}

RuntimeUndo runtime_undo(const Replaced& replaced, const std::string& name,
                         const std::optional<std::string>& binary_now) {
  const auto found = replaced.runtimes.find(name);
  if (found == replaced.runtimes.end()) {
    return RuntimeUndo::erase;
  }
  if (binary_now != found->second.binary) {
    return RuntimeUndo::leave;
  }
  return found->second.created ? RuntimeUndo::erase : RuntimeUndo::restore;
}

std::optional<std::string> default_undo(const Replaced& replaced, const std::string& name) {
  if (replaced.default_runtime && replaced.default_runtime->set == name) {
    return replaced.default_runtime->was;
  }
  return std::nullopt;
}

Replaced without(Replaced replaced, const std::string& name) {
  replaced.runtimes.erase(name);
  if (replaced.default_runtime && replaced.default_runtime->set == name) {
    replaced.default_runtime.reset();
  }
  return replaced;
}

}  // namespace gpuctk::engine
