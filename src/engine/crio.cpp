// CRI-O: a drop-in file of its own in /etc/crio/crio.conf.d, applied after crio.conf and after the drop-ins
// whose names sort before it (crio.conf.d(5)). Keys from CRI-O's docs/crio.conf.5.md and
// pkg/config/config.go (github.com/cri-o/cri-o):
//   [crio.runtime.runtimes.<name>]  a runtime handler (a RuntimeClass handler names it):
//     runtime_path  the OCI runtime binary CRI-O runs, here gpuctk-runtime;
//     runtime_type  "oci": a runc-compatible binary (not a shimv2 "vm" or conmon-rs "pod" runtime);
//     runtime_root  passed to the binary as --root: where runc/crun, run by the shim, keep container state.
//                   Empty would mean CRI-O's default, crun's own /run/crun (pkg/config/config_linux.go).
//     and the handler's other keys: monitor_path, monitor_cgroup, monitor_env, allowed_annotations, ...
//   [crio.runtime] default_runtime  the handler used when a pod names none.
// CDI needs nothing: CRI-O always resolves CDI devices, from cdi_spec_dirs (default /etc/cdi and
// /var/run/cdi; pkg/config/config.go configures the CDI cache unconditionally).
//
// How CRI-O merges its files (UpdateFromDropInFile decodes each file with BurntSushi/toml over the config
// so far): a plain key such as default_runtime is replaced by the last file that sets it, but a handler
// is replaced whole, since the decoder makes each element of the runtimes map afresh. So gpuctk's handler
// in its own drop-in inherits nothing of the handler it stands in for: gpuctk copies that handler's keys
// into it, as NVIDIA's `nvidia-ctk runtime configure` does (pkg/config/engine/crio/crio.go): from a
// handler of the same name in a file read before the drop-in (which it takes over), else from the first
// "oci" handler of the default runtime, runc and crun, as the other files leave them. An entry already in
// the drop-in keeps its keys and gets only the ones it lacks (an entry of an earlier gpuctk that copied
// nothing is completed). Then runtime_path, runtime_type and runtime_root are gpuctk's.
#include <algorithm>
#include <array>
#include <map>

#include "engine/engines.hpp"
#include "engine/toml_doc.hpp"

namespace gpuctk::engine::detail {

namespace {

constexpr std::string_view k_runtime_type = "oci";
constexpr std::string_view k_runtime_root = "/run/gpuctk-runtime";

// The key of a handler that names the binary CRI-O runs: gpuctk's shim, in gpuctk's handler.
constexpr std::array<std::string_view, 1> k_binary_key = {"runtime_path"};

// The handlers whose keys a new one copies, after the default runtime; NVIDIA's configure looks at the
// same names (pkg/config/engine/engine.go, GetLowLevelRuntimes).
constexpr std::array<std::string_view, 2> k_model_fallbacks = {"runc", "crun"};

// Keys of the model handler that gpuctk's handler does not take.
constexpr std::array<std::string_view, 2> k_not_inherited = {
    // CRI-O runs these binaries instead of runtime_path on the platforms they name: the shim would be
    // bypassed there.
    "platform_runtime_paths",
    // CRI-O would replace runtime_path (the shim) with the default runtime's at start (ValidateRuntimes).
    "inherit_default_runtime",
};

// The first lines of a drop-in that gpuctk made from nothing (kept as long as they stay first).
constexpr std::string_view k_header =
    "# The CRI-O runtime handler of gpuctk's runtime shim, written by `gpuctk runtime configure --runtime "
    "crio`;\n# `gpuctk runtime configure --runtime crio --remove` undoes it.\n";

constexpr std::string_view k_cdi_note =
    "CDI needs nothing here: CRI-O always reads CDI specs (cdi_spec_dirs, default /etc/cdi and /var/run/cdi)";

// `doc` printed, after the header when the file had it or is new.
std::string print_dropin(const toml::table& doc, bool header) {
  std::string text = print_toml(doc);
  return header && !text.empty() ? std::string(k_header) + text : text;
}

// What CRI-O makes of a sequence of its files, as far as gpuctk's handler needs it.
struct CrioView {
  std::optional<std::string> default_runtime;
  std::map<std::string, toml::table, std::less<>> runtimes;
};

// The runtime keys of one file, checked as CRI-O's decoder would refuse them: crio.runtime.runtimes and
// its handlers are tables, default_runtime is a string. The tables are nullptr when missing.
struct RuntimeKeys {
  const toml::node* default_runtime = nullptr;
  const toml::table* runtimes = nullptr;
};

Result<const toml::table*> table_or_none(const toml::table* parent, std::string_view key,
                                         std::string_view path) {
  const toml::node* node = parent != nullptr ? parent->get(key) : nullptr;
  if (node == nullptr) {
    return nullptr;
  }
  if (!node->is_table()) {
    return std::unexpected(wrong_type(key_path(path, key), *node, "a table"));
  }
  return node->as_table();
}

Result<RuntimeKeys> runtime_keys(const toml::table& doc) {
  GPUCTK_TRY_ASSIGN(const toml::table* crio, table_or_none(&doc, "crio", ""));
  GPUCTK_TRY_ASSIGN(const toml::table* runtime, table_or_none(crio, "runtime", "crio"));
  RuntimeKeys keys;
  GPUCTK_TRY_ASSIGN(keys.runtimes, table_or_none(runtime, "runtimes", "crio.runtime"));
  if (keys.runtimes != nullptr) {
    for (const auto& [name, handler] : *keys.runtimes) {
      if (!handler.is_table()) {
        return std::unexpected(wrong_type(key_path("crio.runtime.runtimes", name.str()), handler, "a table"));
      }
    }
  }
  keys.default_runtime = runtime != nullptr ? runtime->get("default_runtime") : nullptr;
  if (keys.default_runtime != nullptr && !keys.default_runtime->is_string()) {
    return std::unexpected(wrong_type("crio.runtime.default_runtime", *keys.default_runtime, "a string"));
  }
  return keys;
}

// `keys` over `view`, leaving out handler `skip` and a default runtime that is `skip` ("": none left out).
void merge(CrioView& view, const RuntimeKeys& keys, std::string_view skip) {
  if (keys.default_runtime != nullptr && keys.default_runtime->value_or(std::string_view()) != skip) {
    view.default_runtime = keys.default_runtime->value_or(std::string());
  }
  if (keys.runtimes != nullptr) {
    for (const auto& [name, handler] : *keys.runtimes) {
      if (name.str() != skip) {
        view.runtimes.insert_or_assign(std::string(name.str()), *handler.as_table());
      }
    }
  }
}

Result<RuntimeKeys> source_keys(const SourceFile& file, toml::table& doc) {
  auto parsed = parse_toml(file.text);
  if (!parsed) {
    return fail_with(file.path, parsed.error());
  }
  doc = std::move(*parsed);
  auto keys = runtime_keys(doc);
  if (!keys) {
    return fail_with(file.path, keys.error());
  }
  return keys;
}

bool is_oci(const toml::table& handler) {
  const auto type = handler["runtime_type"].value<std::string_view>();
  return !type || type->empty() || *type == k_runtime_type;
}

// What gpuctk's handler stands in for, and what later files override of it.
struct Inherited {
  std::optional<toml::table> model;  // the handler whose keys gpuctk's copies
  std::vector<std::string> notes;    // what files read after gpuctk's override of it
};

// The model: a handler of gpuctk's name in a file read before, else the first "oci" handler of the default
// runtime, runc and crun as all the other files (and `old` without gpuctk's keys) leave them.
Result<Inherited> inherit(const Sources& sources, const toml::table& old, const RuntimeSettings& settings) {
  const std::string& name = settings.name;
  CrioView view;
  toml::table doc;
  for (const SourceFile& file : sources.before) {
    GPUCTK_TRY_ASSIGN(const RuntimeKeys keys, source_keys(file, doc));
    merge(view, keys, "");
  }
  Inherited inherited;
  if (const auto found = view.runtimes.find(name); found != view.runtimes.end()) {
    inherited.model = found->second;
  }
  if (const auto keys = runtime_keys(old)) {  // a wrong type in `old` is crio_configure's error
    merge(view, *keys, name);
  }
  for (const SourceFile& file : sources.after) {
    GPUCTK_TRY_ASSIGN(const RuntimeKeys keys, source_keys(file, doc));
    merge(view, keys, "");
    if (keys.runtimes != nullptr && keys.runtimes->get(name) != nullptr) {
      inherited.notes.push_back("runtime " + quote(name) + " of " + file.path +
                                " wins: CRI-O reads that file later");
    }
    if (settings.set_as_default && keys.default_runtime != nullptr &&
        keys.default_runtime->value_or(std::string_view()) != name) {
      inherited.notes.push_back("default_runtime " +
                                quote(keys.default_runtime->value_or(std::string_view())) + " of " +
                                file.path + " wins: CRI-O reads that file later");
    }
  }
  if (inherited.model) {
    return inherited;
  }
  std::vector<std::string_view> candidates;
  if (view.default_runtime) {
    candidates.emplace_back(*view.default_runtime);
  }
  candidates.insert(candidates.end(), k_model_fallbacks.begin(), k_model_fallbacks.end());
  for (const std::string_view candidate : candidates) {
    const auto found = candidate != name ? view.runtimes.find(candidate) : view.runtimes.end();
    if (found != view.runtimes.end() && is_oci(found->second)) {
      inherited.model = found->second;
      break;
    }
  }
  return inherited;
}

// The keys of `model` that `entry` lacks, except those gpuctk's handler never takes.
void fill_in(toml::table& entry, const toml::table& model) {
  for (const auto& [key, value] : model) {
    if (entry.get(key) == nullptr && std::ranges::find(k_not_inherited, key.str()) == k_not_inherited.end()) {
      entry.insert(key, value);
    }
  }
}

}  // namespace

Result<void> check_crio_sources(const Sources& sources) {
  toml::table doc;
  for (const auto* files : {&sources.before, &sources.after}) {
    for (const SourceFile& file : *files) {
      GPUCTK_TRY(source_keys(file, doc));
    }
  }
  return {};
}

Result<Edit> crio_configure(const std::optional<std::string>& old, const RuntimeSettings& settings,
                            const EditInputs& inputs) {
  toml::table doc;
  if (old) {
    GPUCTK_TRY_ASSIGN(doc, parse_toml(*old));
  }
  const bool header = doc.empty() || old->starts_with(k_header);
  GPUCTK_TRY_ASSIGN(const Inherited inherited, inherit(inputs.sources, doc, settings));
  Edit edit{.text = {}, .changes = {}, .notes = {}, .replaced = inputs.replaced};
  GPUCTK_TRY_ASSIGN(toml::table * crio, child_table(doc, "crio", ""));
  GPUCTK_TRY_ASSIGN(toml::table * runtime, child_table(*crio, "runtime", "crio"));
  GPUCTK_TRY_ASSIGN(toml::table * runtimes, child_table(*runtime, "runtimes", "crio.runtime"));
  const std::string entry_path = key_path("crio.runtime.runtimes", settings.name);
  const bool added = runtimes->get(settings.name) == nullptr;
  GPUCTK_TRY_ASSIGN(toml::table * entry, child_table(*runtimes, settings.name, "crio.runtime.runtimes"));
  const toml::table entry_before = *entry;
  if (inherited.model) {
    fill_in(*entry, *inherited.model);
  }
  GPUCTK_TRY_ASSIGN(const std::string was,
                    set_string(*entry, "runtime_path", settings.runtime_path, entry_path));
  GPUCTK_TRY(set_string(*entry, "runtime_type", k_runtime_type, entry_path));
  GPUCTK_TRY(set_string(*entry, "runtime_root", k_runtime_root, entry_path));
  if (added || *entry != entry_before) {
    edit.changes.push_back(runtime_phrase(settings, added, added ? "" : was));
    note_entry(edit.replaced, settings, added ? nullptr : &entry_before, *entry, k_binary_key);
  }
  if (settings.set_as_default) {
    GPUCTK_TRY(set_default(*runtime, "default_runtime", settings.name, "crio.runtime", edit));
  }
  if (settings.enable_cdi) {
    edit.notes.emplace_back(k_cdi_note);
  }
  edit.notes.insert(edit.notes.end(), inherited.notes.begin(), inherited.notes.end());
  edit.text = edit.changes.empty() ? old.value_or("") : print_dropin(doc, header);
  return edit;
}

Result<Edit> crio_remove(const std::string& old, const RuntimeSettings& settings, const Replaced& replaced) {
  GPUCTK_TRY_ASSIGN(toml::table doc, parse_toml(old));
  Edit edit{.text = old, .changes = {}, .notes = {}, .replaced = without(replaced, settings.name)};
  toml::table* crio = find_table(doc, "crio");
  toml::table* runtime = crio != nullptr ? find_table(*crio, "runtime") : nullptr;
  if (runtime == nullptr) {
    return edit;
  }
  toml::table* runtimes = find_table(*runtime, "runtimes");
  if (runtimes != nullptr) {
    undo_runtime(*runtimes, settings.name, k_binary_key, replaced, edit);
  }
  undo_default(*runtime, "default_runtime", settings.name, replaced, edit);
  if (edit.changes.empty()) {
    return edit;
  }
  // The tables that held only gpuctk's keys go too: a drop-in with nothing left is deleted (configure.cpp).
  if (runtimes != nullptr && runtimes->empty()) {
    runtime->erase("runtimes");
  }
  if (runtime->empty()) {
    crio->erase("runtime");
  }
  if (crio->empty()) {
    doc.erase("crio");
  }
  edit.text = print_dropin(doc, old.starts_with(k_header));
  return edit;
}

}  // namespace gpuctk::engine::detail
