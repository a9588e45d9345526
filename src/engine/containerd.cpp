// containerd's config.toml. The CRI plugin's table holds the runtimes a RuntimeClass handler names, the
// default runtime and the CDI switch; only the plugin's ID differs between the three schema versions.
// Read from containerd's source (github.com/containerd/containerd):
//   - version 1 (no `version` key; containerd 1.x's first schema, deprecated by 1.3's version 2): 1.6 and
//     1.7 still read it, plugins named by their short ID (services/server/config/config.go, Decode), and
//     2.x migrates it (cmd/containerd/server/config/config.go, v1Migrate): plugins.cri with the same keys;
//   - version 2 (containerd 1.6 and 1.7; 2.x still reads it): docs/cri/config.md and
//     pkg/cri/config/config.go at v1.6.20 and v1.7.9: plugins."io.containerd.grpc.v1.cri" with
//     containerd.runtimes.<name> (runtime_type, options.BinaryName), containerd.default_runtime_name,
//     and, from 1.7, enable_cdi and cdi_spec_dirs on the plugin's own table (PluginConfig);
//   - version 3 (containerd 2.x): docs/cri/config.md and internal/cri/config/config.go at v2.1.4: the same
//     keys under plugins."io.containerd.cri.v1.runtime" (where enable_cdi defaults to true).
// containerd decodes the file over its built-in default config, whose default_runtime_name is "runc": a
// missing key means "runc", while an empty one is an error. containerd 1.x's ValidatePluginConfig
// (pkg/cri/config/config.go at v1.6.20) also makes a deprecated `containerd.default_runtime` table with a
// runtime_type the default runtime, whatever default_runtime_name says, and refuses runtime_engine and
// runtime_root on any runtime whose runtime_type is not io.containerd.runtime.v1.linux.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "engine/containerd_imports.hpp"
#include "engine/engines.hpp"
#include "engine/toml_doc.hpp"

namespace gpuctk::engine::detail {

namespace {

struct Schema {
  int64_t version;
  std::string_view cri_plugin;  // the ID of the plugin whose table holds the keys below
};

constexpr Schema k_schemas[] = {
    // no `version` key (or version = 1): containerd before 1.3, still read by 1.x and migrated by 2.x
    {1, "cri"},
    // containerd 1.6 and 1.7 (Debian 12 ships 1.6.20)
    {2, "io.containerd.grpc.v1.cri"},
    // containerd 2.x
    {3, "io.containerd.cri.v1.runtime"},
};

// The runc shim v2: it runs options.BinaryName as its runc, so gpuctk-runtime sees every runc command.
constexpr std::string_view k_runc_v2 = "io.containerd.runc.v2";

// The runtime types whose options are runc's (BinaryName, SystemdCgroup, ...: runcoptions.Options), so
// that their entry is a model for gpuctk's runc v2 entry.
constexpr std::array<std::string_view, 2> k_runc_types = {
    k_runc_v2,
    // the runc shim v1 (containerd 1.x), the same options
    "io.containerd.runc.v1",
};

// The key of a runtime entry that names the binary the runc shim runs: gpuctk's shim, in gpuctk's entry.
constexpr std::array<std::string_view, 2> k_binary_key = {"options", "BinaryName"};

// The runtime containerd uses when default_runtime_name is not set (its built-in default config).
constexpr std::string_view k_builtin_default = "runc";

// The runtimes whose entry a new one copies, after the default: NVIDIA's `nvidia-ctk runtime configure`
// looks at the same names (pkg/config/engine/engine.go, GetLowLevelRuntimes).
constexpr std::array<std::string_view, 2> k_model_fallbacks = {"runc", "crun"};

// Keys of a runtime entry that containerd 1.x refuses beside any runtime_type but the old
// io.containerd.runtime.v1.linux; a taken-over entry of that kind loses them when they are not empty.
constexpr std::array<std::string_view, 2> k_linux_v1_keys = {
    "runtime_engine",  // the runc binary of io.containerd.runtime.v1.linux
    "runtime_root",    // its state directory
};
// containerd's default cdi_spec_dirs, written with enable_cdi when the file names none.
constexpr std::array<std::string_view, 2> k_cdi_spec_dirs = {"/etc/cdi", "/var/run/cdi"};

const Schema* find_schema(int64_t version) {
  for (const Schema& schema : k_schemas) {
    if (schema.version == version) {
      return &schema;
    }
  }
  return nullptr;
}

Result<const Schema*> schema_of(const toml::table& doc) {
  const toml::node* node = doc.get("version");
  if (node == nullptr) {
    return find_schema(1);
  }
  const auto* version = node->as_integer();
  if (version == nullptr) {
    return std::unexpected(wrong_type("version", *node, "an integer"));
  }
  const Schema* schema = find_schema(version->get());
  if (schema == nullptr) {
    return fail("containerd config version " + std::to_string(version->get()) +
                " is not supported (want 1, 2 or 3)");
  }
  return schema;
}

// The tables on the way to the runtimes, with their key paths (for errors).
struct CriTables {
  toml::table* cri = nullptr;         // plugins.<cri plugin>
  toml::table* containerd = nullptr;  // plugins.<cri plugin>.containerd
  toml::table* runtimes = nullptr;    // plugins.<cri plugin>.containerd.runtimes
  std::string cri_path;
  std::string containerd_path;
  std::string runtimes_path;
};

Result<CriTables> make_cri_tables(toml::table& doc, const Schema& schema) {
  CriTables t;
  GPUCTK_TRY_ASSIGN(toml::table * plugins, child_table(doc, "plugins", ""));
  GPUCTK_TRY_ASSIGN(t.cri, child_table(*plugins, schema.cri_plugin, "plugins"));
  t.cri_path = key_path("plugins", schema.cri_plugin);
  GPUCTK_TRY_ASSIGN(t.containerd, child_table(*t.cri, "containerd", t.cri_path));
  t.containerd_path = key_path(t.cri_path, "containerd");
  GPUCTK_TRY_ASSIGN(t.runtimes, child_table(*t.containerd, "runtimes", t.containerd_path));
  t.runtimes_path = key_path(t.containerd_path, "runtimes");
  return t;
}

bool is_runc_type(const toml::table& entry) {
  const auto type = entry["runtime_type"].value<std::string_view>();
  return type && std::ranges::find(k_runc_types, *type) != k_runc_types.end();
}

// A new runtime entry starts as a copy of a runc runtime's entry: the default runtime's, else runc's,
// else crun's, the first that is there and of a runc type. Its options (SystemdCgroup above all: with the
// systemd cgroup driver every runc runtime of the node must use it) then hold for gpuctk's runtime too.
// Any other runtime (kata, gVisor) is no model; with none the entry starts empty.
toml::table new_entry(CriTables& t, std::string_view name) {
  const toml::node* default_name = t.containerd->get("default_runtime_name");
  std::vector<std::string_view> candidates{
      default_name != nullptr ? default_name->value_or(std::string_view()) : k_builtin_default};
  candidates.insert(candidates.end(), k_model_fallbacks.begin(), k_model_fallbacks.end());
  for (const std::string_view candidate : candidates) {
    const toml::table* model = candidate != name ? find_table(*t.runtimes, candidate) : nullptr;
    if (model != nullptr && is_runc_type(*model)) {
      return *model;
    }
  }
  return {};
}

// Removes the io.containerd.runtime.v1.linux keys that containerd 1.x refuses beside a runc v2 entry.
void drop_linux_v1_keys(toml::table& entry) {
  for (const std::string_view key : k_linux_v1_keys) {
    if (const auto value = entry[key].value<std::string_view>(); value && !value->empty()) {
      entry.erase(key);
    }
  }
}

// --set-as-default writes default_runtime_name, which containerd 1.x overrides with a deprecated
// `default_runtime` table that has a runtime_type; the setting could not take effect, so it is refused.
Result<void> check_no_deprecated_default(CriTables& t) {
  const toml::node* type = t.containerd->at_path("default_runtime.runtime_type").node();
  if (type == nullptr || type->value_or(std::string_view()).empty()) {
    return {};
  }
  const std::string table_path = key_path(t.containerd_path, "default_runtime");
  return fail(key_path(table_path, "runtime_type") + " is set (at line " +
              std::to_string(type->source().begin.line) + ", column " +
              std::to_string(type->source().begin.column) +
              "): containerd 1.x makes that deprecated table its default runtime whatever "
              "default_runtime_name says; define it under " +
              t.runtimes_path + " instead to make another runtime the default");
}

Result<void> enable_cdi(CriTables& t, std::vector<std::string>& changes) {
  bool changed = false;
  const std::string enable_path = key_path(t.cri_path, "enable_cdi");
  if (const toml::node* node = t.cri->get("enable_cdi"); node == nullptr || !node->value_or(false)) {
    if (node != nullptr && !node->is_boolean()) {
      return std::unexpected(wrong_type(enable_path, *node, "a boolean"));
    }
    t.cri->insert_or_assign("enable_cdi", true);
    changed = true;
  }
  // A list the administrator chose stays; containerd 1.6's `config default` has none.
  if (t.cri->get("cdi_spec_dirs") == nullptr) {
    toml::array dirs;
    for (const std::string_view dir : k_cdi_spec_dirs) {
      dirs.push_back(std::string(dir));
    }
    t.cri->insert_or_assign("cdi_spec_dirs", std::move(dirs));
    changed = true;
  }
  if (changed) {
    changes.emplace_back(k_cdi_enabled);
  }
  return {};
}

// The CRI plugin's table of `doc` under its schema's plugin ID, or nullptr when it has none. An import
// without a `version` key names plugins as the config file does (containerd 1.6's and 2.1's dump).
Result<const toml::table*> cri_table_of(const toml::table& doc, const Schema& unversioned) {
  const Schema* schema = &unversioned;
  if (doc.get("version") != nullptr) {
    GPUCTK_TRY_ASSIGN(schema, schema_of(doc));
  }
  const toml::node* plugins = doc.get("plugins");
  const toml::node* cri =
      plugins != nullptr && plugins->is_table() ? plugins->as_table()->get(schema->cri_plugin) : nullptr;
  return cri != nullptr ? cri->as_table() : nullptr;
}

// `from` merged into `to` key by key, as containerd 2.x merges an import's plugin tables.
void merge_keys(toml::table& to, const toml::table& from) {
  for (const auto& [key, value] : from) {
    toml::node* at = to.get(key);
    if (value.is_table() && at != nullptr && at->is_table()) {
      merge_keys(*at->as_table(), *value.as_table());
    } else {
      to.insert_or_assign(key, value);
    }
  }
}

// Merges the CRI plugin tables of `imports` into `cri` as containerd does with the config file's `schema`
// (containerd_effective), calling `after_each` after each import that has one.
template <class AfterEach>
Result<void> fold_imports(const Schema& schema, const std::vector<SourceFile>& imports, toml::table& cri,
                          AfterEach after_each) {
  for (const SourceFile& file : imports) {
    auto parsed = parse_toml(file.text);
    if (!parsed) {
      return fail_with(file.path, parsed.error());
    }
    auto table = cri_table_of(*parsed, schema);
    if (!table) {
      return fail_with(file.path, table.error());
    }
    if (*table == nullptr) {
      continue;
    }
    if (schema.version >= 3) {
      merge_keys(cri, **table);
    } else {
      cri = **table;  // containerd 1.x: the plugin's table of a later file replaces the earlier one whole
    }
    after_each(file);
  }
  return {};
}

// What the merged CRI table says: runtime `name`'s binary and the default runtime name.
struct Said {
  std::optional<std::string> binary;  // nullopt: no runtime `name`
  std::string default_name;
};

Said said(const toml::table& cri, std::string_view name) {
  Said out;
  const toml::node* entry = cri.at_path("containerd.runtimes").node();
  if (entry != nullptr && entry->is_table() && entry->as_table()->get(name) != nullptr) {
    const toml::node* runtime = entry->as_table()->get(name);
    out.binary = runtime->is_table()
                     ? runtime->as_table()->at_path("options.BinaryName").value_or(std::string())
                     : std::string();
  }
  const toml::node* default_name = cri.at_path("containerd.default_runtime_name").node();
  out.default_name =
      default_name != nullptr ? default_name->value_or(std::string()) : std::string(k_builtin_default);
  return out;
}

}  // namespace

Result<ContainerdEffective> containerd_effective(const toml::table& doc,
                                                 const std::vector<SourceFile>& imports,
                                                 std::string_view name) {
  GPUCTK_TRY_ASSIGN(const Schema* schema, schema_of(doc));
  // containerd 2.x reads only version 3 files as written (older ones are migrated first); a version 2 or 1
  // file may be read by 1.x, whose replacing merge is the stricter one: what it keeps, 2.x keeps too.
  toml::table cri;
  GPUCTK_TRY_ASSIGN(const toml::table* own, cri_table_of(doc, *schema));
  if (own != nullptr) {
    cri = *own;
  }
  Said now = said(cri, name);
  ContainerdEffective effective{
      .binary = now.binary, .binary_from = {}, .default_name = now.default_name, .default_from = {}};
  GPUCTK_TRY(fold_imports(*schema, imports, cri, [&](const SourceFile& file) {
    now = said(cri, name);
    if (now.binary != effective.binary) {
      effective.binary = now.binary;
      effective.binary_from = file.path;
    }
    if (now.default_name != effective.default_name) {
      effective.default_name = now.default_name;
      effective.default_from = file.path;
    }
  }));
  return effective;
}

Result<ContainerdOwn> containerd_own(std::string_view text, const RuntimeSettings& settings) {
  GPUCTK_TRY_ASSIGN(const toml::table doc, parse_toml(text));
  if (doc.empty()) {
    return ContainerdOwn{};
  }
  GPUCTK_TRY_ASSIGN(const Schema* schema, schema_of(doc));
  GPUCTK_TRY_ASSIGN(const toml::table* cri, cri_table_of(doc, *schema));
  const bool holds = cri != nullptr && said(*cri, settings.name).binary == settings.runtime_path;
  return ContainerdOwn{.version = static_cast<int>(schema->version), .holds_runtime = holds};
}

namespace {

// The notes of containerd_configure when an import read after `doc` masks what gpuctk wrote there.
Result<void> note_imports(const toml::table& doc, const RuntimeSettings& settings, const Sources& sources,
                          Edit& edit) {
  if (sources.after.empty()) {
    return {};
  }
  GPUCTK_TRY_ASSIGN(const ContainerdEffective effective,
                    containerd_effective(doc, sources.after, settings.name));
  const std::string later = ": containerd reads that import after this file";
  if (!effective.binary) {
    edit.notes.push_back("warning: runtime " + quote(settings.name) + " is dropped by " +
                         effective.binary_from +
                         ", whose CRI plugin table replaces this file's whole in containerd 1.x" + later);
  } else if (*effective.binary != settings.runtime_path) {
    edit.notes.push_back("warning: runtime " + quote(settings.name) + " of " + effective.binary_from +
                         " wins (it runs " + (effective.binary->empty() ? "runc" : *effective.binary) +
                         ", not gpuctk's " + settings.runtime_path + ")" + later);
  }
  if (settings.set_as_default && effective.default_name != settings.name) {
    edit.notes.push_back("warning: default runtime " + quote(effective.default_name) + " of " +
                         effective.default_from + " wins" + later);
  }
  return {};
}

}  // namespace

Result<Edit> containerd_configure(const std::optional<std::string>& old, const RuntimeSettings& settings,
                                  const EditInputs& inputs) {
  toml::table doc;
  if (old) {
    GPUCTK_TRY_ASSIGN(doc, parse_toml(*old));
  }
  const Schema* schema = nullptr;
  if (doc.empty()) {
    // No file, an empty one, or comments only: a new file of the schema asked for (2 or 3).
    schema = settings.containerd_version >= 2 ? find_schema(settings.containerd_version) : nullptr;
    if (schema == nullptr) {
      return fail("containerd config version " + std::to_string(settings.containerd_version) +
                  " is not supported (want 2 or 3)");
    }
    doc.insert_or_assign("version", schema->version);
  } else {
    GPUCTK_TRY_ASSIGN(schema, schema_of(doc));
  }
  GPUCTK_TRY_ASSIGN(CriTables t, make_cri_tables(doc, *schema));

  Edit edit{.text = {}, .changes = {}, .notes = {}, .replaced = inputs.replaced};
  const std::string entry_path = key_path(t.runtimes_path, settings.name);
  const bool added = t.runtimes->get(settings.name) == nullptr;
  if (added) {
    t.runtimes->insert_or_assign(settings.name, new_entry(t, settings.name));
  }
  toml::node* entry_node = t.runtimes->get(settings.name);
  toml::table* entry = entry_node->as_table();
  if (entry == nullptr) {
    return std::unexpected(wrong_type(entry_path, *entry_node, "a table"));
  }
  const toml::table entry_before = *entry;
  GPUCTK_TRY(set_string(*entry, "runtime_type", k_runc_v2, entry_path));
  drop_linux_v1_keys(*entry);
  GPUCTK_TRY_ASSIGN(toml::table * options, child_table(*entry, "options", entry_path));
  GPUCTK_TRY_ASSIGN(const std::string was, set_string(*options, "BinaryName", settings.runtime_path,
                                                      key_path(entry_path, "options")));
  if (added || *entry != entry_before) {
    edit.changes.push_back(runtime_phrase(settings, added, added ? "" : was));
    note_entry(edit.replaced, settings, added ? nullptr : &entry_before, *entry, k_binary_key);
  }

  if (settings.set_as_default) {
    if (schema->version < 3) {
      GPUCTK_TRY(check_no_deprecated_default(t));
    }
    GPUCTK_TRY(set_default(*t.containerd, "default_runtime_name", settings.name, t.containerd_path, edit));
  }
  if (settings.enable_cdi) {
    GPUCTK_TRY(enable_cdi(t, edit.changes));
  }
  GPUCTK_TRY(note_imports(doc, settings, inputs.sources, edit));
  edit.text = edit.changes.empty() ? old.value_or("") : print_toml(doc);
  return edit;
}

Result<Edit> containerd_remove(const std::string& old, const RuntimeSettings& settings,
                               const Replaced& replaced) {
  GPUCTK_TRY_ASSIGN(toml::table doc, parse_toml(old));
  Edit edit{.text = old, .changes = {}, .notes = {}, .replaced = without(replaced, settings.name)};
  if (doc.empty()) {
    return edit;
  }
  GPUCTK_TRY_ASSIGN(const Schema* schema, schema_of(doc));
  // What is not a table on the way holds nothing of gpuctk's.
  toml::table* plugins = find_table(doc, "plugins");
  toml::table* cri = plugins != nullptr ? find_table(*plugins, schema->cri_plugin) : nullptr;
  toml::table* containerd = cri != nullptr ? find_table(*cri, "containerd") : nullptr;
  if (containerd == nullptr) {
    return edit;
  }
  if (toml::table* runtimes = find_table(*containerd, "runtimes"); runtimes != nullptr) {
    undo_runtime(*runtimes, settings.name, k_binary_key, replaced, edit);
  }
  undo_default(*containerd, "default_runtime_name", settings.name, replaced, edit);
  if (!edit.changes.empty()) {
    edit.text = print_toml(doc);
  }
  return edit;
}

namespace {

// The first text of gpuctk's drop-in: config.toml's version, and its CRI plugin's table as the files read
// before the drop-in leave it (`before`: config.toml, then those imports), copied whole; "" when
// config.toml is missing or empty (containerd_configure then starts a file of the version asked for).
Result<std::string> drop_in_seed(const std::vector<SourceFile>& before) {
  if (before.empty()) {
    return std::string();
  }
  auto doc = parse_toml(before.front().text);
  if (!doc) {
    return fail_with(before.front().path, doc.error());
  }
  if (doc->empty()) {
    return std::string();
  }
  auto schema = schema_of(*doc);
  if (!schema) {
    return fail_with(before.front().path, schema.error());
  }
  toml::table cri;
  GPUCTK_TRY_ASSIGN(const toml::table* own, cri_table_of(*doc, **schema));
  if (own != nullptr) {
    cri = *own;
  }
  GPUCTK_TRY(fold_imports(**schema, std::vector<SourceFile>(before.begin() + 1, before.end()), cri,
                          [](const SourceFile&) {}));
  toml::table seed;
  if ((*schema)->version != 1) {
    seed.insert_or_assign("version", (*schema)->version);
  }
  toml::table plugins;
  plugins.insert_or_assign((*schema)->cri_plugin, std::move(cri));
  seed.insert_or_assign("plugins", std::move(plugins));
  return print_toml(seed);
}

}  // namespace

Result<Edit> containerd_drop_in_configure(const std::optional<std::string>& old,
                                          const RuntimeSettings& settings, const EditInputs& inputs) {
  const Sources later{.before = {}, .after = inputs.sources.after};
  const EditInputs later_inputs{.sources = later, .replaced = inputs.replaced};
  if (old && !old->empty()) {
    return containerd_configure(old, settings, later_inputs);
  }
  GPUCTK_TRY_ASSIGN(const std::string seed, drop_in_seed(inputs.sources.before));
  if (seed.empty()) {
    return containerd_configure(old, settings, later_inputs);
  }
  GPUCTK_TRY_ASSIGN(Edit edit, containerd_configure(seed, settings, later_inputs));
  if (edit.changes.empty()) {
    // config.toml already has gpuctk's runtime: the drop-in, a copy of its table, is written all the same,
    // since config.toml will import it.
    edit.changes.push_back(runtime_phrase(settings, true, ""));
  }
  return edit;
}

Result<Edit> containerd_add_import(const std::optional<std::string>& old, const RuntimeSettings& settings,
                                   const EditInputs& inputs) {
  toml::table doc;
  if (old) {
    GPUCTK_TRY_ASSIGN(doc, parse_toml(*old));
  }
  if (doc.empty()) {
    doc.insert_or_assign("version", settings.containerd_version);
  }
  GPUCTK_TRY(containerd_imports(doc));  // an array of strings
  if (doc.get("imports") == nullptr) {
    doc.insert_or_assign("imports", toml::array{});
  }
  doc.get("imports")->as_array()->push_back(settings.drop_in);
  return Edit{.text = print_toml(doc),
              .changes = {"import " + settings.drop_in + " added"},
              .notes = {},
              .replaced = inputs.replaced};
}

Result<Edit> containerd_remove_import(const std::string& old, const RuntimeSettings& settings,
                                      const Replaced& replaced) {
  GPUCTK_TRY_ASSIGN(toml::table doc, parse_toml(old));
  Edit edit{.text = old, .changes = {}, .notes = {}, .replaced = replaced};
  toml::array* imports = doc.get("imports") != nullptr ? doc.get("imports")->as_array() : nullptr;
  if (imports == nullptr) {
    return edit;
  }
  const size_t before = imports->size();
  for (size_t i = imports->size(); i > 0; --i) {
    if ((*imports)[i - 1].value_or(std::string_view()) == settings.drop_in) {
      imports->erase(imports->begin() + static_cast<std::ptrdiff_t>(i - 1));
    }
  }
  if (imports->size() == before) {
    return edit;
  }
  if (imports->empty()) {
    doc.erase("imports");
  }
  edit.changes.push_back("import " + settings.drop_in + " removed");
  edit.text = print_toml(doc);
  return edit;
}

}  // namespace gpuctk::engine::detail
