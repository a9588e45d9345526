// docker's daemon.json (dockerd --config-file): "runtimes": {"<name>": {"path": …}} makes
// `docker run --runtime <name>` run that binary as its runc; "default-runtime" names the runtime of every
// other container; "features": {"cdi": true} turns on docker 25's CDI support (`--device vendor/class=x`).
// nlohmann's ordered_json keeps the document's key order, so every key gpuctk does not touch stays where
// it was.
#include <optional>
#include <vector>

#include "engine/engines.hpp"
#include "engine/json_doc.hpp"

namespace gpuctk::engine::detail {

namespace {

// The key of a runtime entry that names the binary dockerd runs as its runc: gpuctk's shim, in gpuctk's
// entry.
constexpr const char* k_binary_key = "path";

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

// The string at `key` of `object`; nullopt when there is none or it is no string.
std::optional<std::string> string_of(const Json& object, const std::string& key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? std::optional(found->get<std::string>())
                                                     : std::nullopt;
}

// --remove of runtime `name`'s entry as the record says (replaced.hpp).
void undo_runtime(Json& runtimes, const std::string& name, const Replaced& replaced, Edit& edit) {
  const auto entry = runtimes.find(name);
  if (entry == runtimes.end()) {
    return;
  }
  const std::optional<std::string> binary =
      entry->is_object() ? string_of(*entry, k_binary_key) : std::nullopt;
  switch (runtime_undo(replaced, name, binary)) {
    case RuntimeUndo::erase:
      runtimes.erase(entry);
      edit.changes.push_back(removed_phrase(name));
      return;
    case RuntimeUndo::restore:
      for (const ReplacedKey& key : replaced.runtimes.at(name).keys) {
        // gpuctk changes only the entry's own "path"; a record that says more is not its own.
        if (key.key.size() == 1 && key.was) {
          (*entry)[key.key.front()] = *key.was;
        } else if (key.key.size() == 1) {
          entry->erase(key.key.front());
        }
      }
      edit.changes.push_back(restored_phrase(name, string_of(*entry, k_binary_key).value_or("")));
      return;
    case RuntimeUndo::leave:
      edit.notes.push_back(
          left_alone_note(name, binary.value_or("nothing"), replaced.runtimes.at(name).binary));
      return;
  }
}

}  // namespace

Result<Edit> docker_configure(const std::optional<std::string>& old, const RuntimeSettings& settings,
                              const EditInputs& inputs) {
  Json doc = Json::object();
  if (old) {
    GPUCTK_TRY_ASSIGN(doc, parse_json_object(*old));
  }
  Edit edit{.text = {}, .changes = {}, .notes = {}, .replaced = inputs.replaced};
  GPUCTK_TRY_ASSIGN(Json * runtimes, child_object(doc, "runtimes", "runtimes"));
  const std::string entry_path = "runtimes." + settings.name;
  const bool added = !runtimes->contains(settings.name);
  GPUCTK_TRY_ASSIGN(Json * entry, child_object(*runtimes, settings.name, entry_path));
  const bool had_path = entry->contains(k_binary_key);
  GPUCTK_TRY_ASSIGN(const std::string was,
                    set_string(*entry, k_binary_key, settings.runtime_path, entry_path + ".path"));
  if (added || was != settings.runtime_path) {
    edit.changes.push_back(runtime_phrase(settings, added, was));
    std::vector<ReplacedKey> changed;
    if (!added) {
      changed.push_back(
          ReplacedKey{.key = {k_binary_key}, .was = had_path ? std::optional(was) : std::nullopt});
    }
    note_runtime(edit.replaced, settings.name, settings.runtime_path,
                 added ? std::nullopt : std::optional(was), std::move(changed));
  }
  if (settings.set_as_default) {
    const bool had_default = doc.contains("default-runtime");
    GPUCTK_TRY_ASSIGN(const std::string before,
                      set_string(doc, "default-runtime", settings.name, "default-runtime"));
    if (before != settings.name) {
      edit.changes.push_back(default_phrase(settings.name, before));
      note_default(edit.replaced, settings.name, had_default ? std::optional(before) : std::nullopt);
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

Result<Edit> docker_remove(const std::string& old, const RuntimeSettings& settings,
                           const Replaced& replaced) {
  GPUCTK_TRY_ASSIGN(Json doc, parse_json_object(old));
  Edit edit{.text = old, .changes = {}, .notes = {}, .replaced = without(replaced, settings.name)};
  if (const auto runtimes = doc.find("runtimes"); runtimes != doc.end() && runtimes->is_object()) {
    undo_runtime(*runtimes, settings.name, replaced, edit);
  }
  if (string_of(doc, "default-runtime") == settings.name) {
    if (const std::optional<std::string> was = default_undo(replaced, settings.name)) {
      doc["default-runtime"] = *was;
      edit.changes.push_back(default_restored_phrase(*was));
    } else {
      doc.erase("default-runtime");
      edit.changes.push_back(default_unset_phrase(settings.name));
    }
  }
  if (!edit.changes.empty()) {
    GPUCTK_TRY_ASSIGN(edit.text, print_daemon_json(doc));
  }
  return edit;
}

}  // namespace gpuctk::engine::detail
