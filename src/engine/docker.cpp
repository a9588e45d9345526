// docker's daemon.json (dockerd --config-file): "runtimes": {"<name>": {"path": …}} makes
// `docker run --runtime <name>` run that binary as its runc; "default-runtime" names the runtime of every
// other container; "features": {"cdi": true} turns on docker 25's CDI support (`--device vendor/class=x`).
// nlohmann's ordered_json keeps the document's key order, so every key gpuctk does not touch stays where
// it was.
#include <nlohmann/json.hpp>

#include "engine/engines.hpp"

namespace gpuctk::engine::detail {

namespace {

using Json = nlohmann::ordered_json;

// daemon.json nests 3 levels; nlohmann copies, compares and prints recursively, so a deeper document is
// refused before it is built.
constexpr int k_max_depth = 64;

// "an object", "a string", "null".
std::string a_type(const Json& value) {
  const std::string_view name = value.type_name();
  if (value.is_null()) {
    return std::string(name);
  }
  return (value.is_object() || value.is_array() ? "an " : "a ") + std::string(name);
}

Result<Json> parse_daemon_json(const std::string& text) {
  // dockerd takes an empty file for an empty configuration.
  if (trim(text).empty()) {
    return Json::object();
  }
  bool too_deep = false;
  const Json::parser_callback_t limit = [&too_deep](int depth, Json::parse_event_t /*event*/,
                                                    Json& /*value*/) {
    if (depth > k_max_depth) {
      too_deep = true;
      return false;  // not kept
    }
    return true;
  };
  Json doc;
  try {
    doc = Json::parse(text, limit);
  } catch (const Json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 1: syntax error ..." -> from "parse".
    const std::string_view what = e.what();
    const auto start = what.find("parse error");
    return fail(std::string(start == std::string_view::npos ? what : what.substr(start)));
  }
  if (too_deep) {
    return fail("nested deeper than " + std::to_string(k_max_depth) + " levels");
  }
  if (!doc.is_object()) {
    return fail("the document is " + a_type(doc) + " (want an object)");
  }
  return doc;
}

Error wrong_type(std::string_view path, const Json& value, std::string_view want) {
  return Error{std::string(path) + " is " + a_type(value) + " (want " + std::string(want) + ")"};
}

// The object at `key` of `parent`, made when missing; an error when `key` holds anything else.
Result<Json*> child_object(Json& parent, const std::string& key, std::string_view path) {
  if (!parent.contains(key)) {
    parent[key] = Json::object();
  }
  Json& child = parent[key];
  if (!child.is_object()) {
    return std::unexpected(wrong_type(path, child, "an object"));
  }
  return &child;
}

// Sets `key` of `object` to `value`, or fails when it holds a non-string; returns the earlier value.
Result<std::string> set_string(Json& object, const std::string& key, const std::string& value,
                               std::string_view path) {
  std::string before;
  if (const auto found = object.find(key); found != object.end()) {
    if (!found->is_string()) {
      return std::unexpected(wrong_type(path, *found, "a string"));
    }
    before = found->get<std::string>();
  }
  object[key] = value;
  return before;
}

Result<std::string> print_daemon_json(const Json& doc) {
  try {
    return doc.dump(4) + "\n";
  } catch (const Json::exception& e) {  // a string that is not UTF-8
    return fail(e.what());
  }
}

}  // namespace

Result<Edit> docker_configure(const std::optional<std::string>& old, const RuntimeSettings& settings) {
  Json doc = Json::object();
  if (old) {
    GPUCTK_TRY_ASSIGN(doc, parse_daemon_json(*old));
  }
  Edit edit;
  GPUCTK_TRY_ASSIGN(Json * runtimes, child_object(doc, "runtimes", "runtimes"));
  const std::string entry_path = "runtimes." + settings.name;
  const bool added = !runtimes->contains(settings.name);
  GPUCTK_TRY_ASSIGN(Json * entry, child_object(*runtimes, settings.name, entry_path));
  GPUCTK_TRY_ASSIGN(const std::string was,
                    set_string(*entry, "path", settings.runtime_path, entry_path + ".path"));
  if (added || was != settings.runtime_path) {
    edit.changes.push_back(runtime_phrase(settings, added, was));
  }
  if (settings.set_as_default) {
    GPUCTK_TRY_ASSIGN(const std::string before,
                      set_string(doc, "default-runtime", settings.name, "default-runtime"));
    if (before != settings.name) {
      edit.changes.push_back(default_phrase(settings.name, before));
    }
  }
  if (settings.enable_cdi) {
    GPUCTK_TRY_ASSIGN(Json * features, child_object(doc, "features", "features"));
    const auto cdi = features->find("cdi");
    if (cdi != features->end() && !cdi->is_boolean()) {
      return std::unexpected(wrong_type("features.cdi", *cdi, "a boolean"));
    }
    if (cdi == features->end() || !cdi->get<bool>()) {
      (*features)["cdi"] = true;
      edit.changes.emplace_back(k_cdi_enabled);
    }
  }
  if (edit.changes.empty()) {
    edit.text = old.value_or("");
    return edit;
  }
  GPUCTK_TRY_ASSIGN(edit.text, print_daemon_json(doc));
  return edit;
}

Result<Edit> docker_remove(const std::string& old, const RuntimeSettings& settings) {
  GPUCTK_TRY_ASSIGN(Json doc, parse_daemon_json(old));
  Edit edit{.text = old, .changes = {}, .notes = {}};
  if (const auto runtimes = doc.find("runtimes");
      runtimes != doc.end() && runtimes->is_object() && runtimes->erase(settings.name) != 0) {
    edit.changes.push_back(removed_phrase(settings.name));
  }
  if (const auto found = doc.find("default-runtime");
      found != doc.end() && found->is_string() && found->get<std::string>() == settings.name) {
    doc.erase("default-runtime");
    edit.changes.push_back(default_unset_phrase(settings.name));
  }
  if (!edit.changes.empty()) {
    GPUCTK_TRY_ASSIGN(edit.text, print_daemon_json(doc));
  }
  return edit;
}

}  // namespace gpuctk::engine::detail
