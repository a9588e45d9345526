// CRI-O: a drop-in file of its own in /etc/crio/crio.conf.d, applied after crio.conf and after the drop-ins
// whose names sort before it (crio.conf.d(5)). Keys from CRI-O's docs/crio.conf.5.md and
// pkg/config/config.go (github.com/cri-o/cri-o):
//   [crio.runtime.runtimes.<name>]  a runtime handler (a RuntimeClass handler names it):
//     runtime_path  the OCI runtime binary CRI-O runs, here gpuctk-runtime;
//     runtime_type  "oci": a runc-compatible binary (not a shimv2 "vm" or conmon-rs "pod" runtime);
//     runtime_root  passed to the binary as --root: where runc/crun, run by the shim, keep container state.
//                   Empty would mean CRI-O's default, crun's own /run/crun (pkg/config/config_linux.go).
//   [crio.runtime] default_runtime  the handler used when a pod names none.
// CDI needs nothing: CRI-O always resolves CDI devices, from cdi_spec_dirs (default /etc/cdi and
// /var/run/cdi; pkg/config/config.go configures the CDI cache unconditionally).
#include "engine/engines.hpp"
#include "engine/toml_doc.hpp"

namespace gpuctk::engine::detail {

namespace {

constexpr std::string_view k_runtime_type = "oci";
constexpr std::string_view k_runtime_root = "/run/gpuctk-runtime";

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

}  // namespace

Result<Edit> crio_configure(const std::optional<std::string>& old, const RuntimeSettings& settings) {
  toml::table doc;
  if (old) {
    GPUCTK_TRY_ASSIGN(doc, parse_toml(*old));
  }
  const bool header = doc.empty() || old->starts_with(k_header);
  Edit edit;
  GPUCTK_TRY_ASSIGN(toml::table * crio, child_table(doc, "crio", ""));
  GPUCTK_TRY_ASSIGN(toml::table * runtime, child_table(*crio, "runtime", "crio"));
  GPUCTK_TRY_ASSIGN(toml::table * runtimes, child_table(*runtime, "runtimes", "crio.runtime"));
  const std::string entry_path = key_path("crio.runtime.runtimes", settings.name);
  const bool added = runtimes->get(settings.name) == nullptr;
  GPUCTK_TRY_ASSIGN(toml::table * entry, child_table(*runtimes, settings.name, "crio.runtime.runtimes"));
  const toml::table entry_before = *entry;
  GPUCTK_TRY_ASSIGN(const std::string was,
                    set_string(*entry, "runtime_path", settings.runtime_path, entry_path));
  GPUCTK_TRY(set_string(*entry, "runtime_type", k_runtime_type, entry_path));
  GPUCTK_TRY(set_string(*entry, "runtime_root", k_runtime_root, entry_path));
  if (added || *entry != entry_before) {
    edit.changes.push_back(runtime_phrase(settings, added, added ? "" : was));
  }
  if (settings.set_as_default) {
    GPUCTK_TRY_ASSIGN(const std::string before,
                      set_string(*runtime, "default_runtime", settings.name, "crio.runtime"));
    if (before != settings.name) {
      edit.changes.push_back(default_phrase(settings.name, before));
    }
  }
  if (settings.enable_cdi) {
    edit.notes.emplace_back(k_cdi_note);
  }
  edit.text = edit.changes.empty() ? old.value_or("") : print_dropin(doc, header);
  return edit;
}

Result<Edit> crio_remove(const std::string& old, const RuntimeSettings& settings) {
  GPUCTK_TRY_ASSIGN(toml::table doc, parse_toml(old));
  Edit edit{.text = old, .changes = {}, .notes = {}};
  toml::table* crio = find_table(doc, "crio");
  toml::table* runtime = crio != nullptr ? find_table(*crio, "runtime") : nullptr;
  if (runtime == nullptr) {
    return edit;
  }
  toml::table* runtimes = find_table(*runtime, "runtimes");
  if (runtimes != nullptr && runtimes->erase(settings.name) != 0) {
    edit.changes.push_back(removed_phrase(settings.name));
  }
  if (const toml::node* node = runtime->get("default_runtime");
      node != nullptr && node->value_or(std::string_view()) == settings.name) {
    runtime->erase("default_runtime");
    edit.changes.push_back(default_unset_phrase(settings.name));
  }
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
