#pragma once
// The file format of each engine, behind configure.hpp (internal to src/engine). Each function is pure:
// text in, text out, and says what it changed so that configure() can write one line about it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/configure.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace gpuctk::engine::detail {

struct Edit {
  std::string text;                  // the new text; the old text itself when `changes` is empty
  std::vector<std::string> changes;  // what changed, each a phrase of the summary
  std::vector<std::string> notes;    // said whether or not anything changed (CRI-O and --cdi)
  Replaced replaced;                 // the record (replaced.hpp) after the edit
};

// What an edit reads besides the file's own text.
struct EditInputs {
  const Sources& sources;    // the engine's other files (CRI-O)
  const Replaced& replaced;  // the record so far
};

Result<Edit> containerd_configure(const std::optional<std::string>& old, const RuntimeSettings& settings,
                                  const EditInputs& inputs);
Result<Edit> containerd_remove(const std::string& old, const RuntimeSettings& settings,
                               const Replaced& replaced);
// containerd with RuntimeSettings::drop_in: the drop-in's text (inputs.sources: `before` config.toml and
// the imports read before the drop-in, whose CRI table a new drop-in copies; `after` those read after it,
// for the warnings), and config.toml's `imports` with the drop-in added or removed.
Result<Edit> containerd_drop_in_configure(const std::optional<std::string>& old,
                                          const RuntimeSettings& settings, const EditInputs& inputs);
Result<Edit> containerd_add_import(const std::optional<std::string>& old, const RuntimeSettings& settings,
                                   const EditInputs& inputs);
Result<Edit> containerd_remove_import(const std::string& old, const RuntimeSettings& settings,
                                      const Replaced& replaced);

// Where gpuctk's drop-in `drop_in` falls among config.toml's files: `sources.before` config.toml (when
// there is one) and the imports containerd reads before the drop-in, `sources.after` those after it, as
// containerd_sources reads them, the drop-in counted as there (a glob that would match it matches it);
// `needs_import` when no import of config.toml names it (it is then imported last). `config_text`: the text
// config.toml is taken to have instead of what the file holds (nullptr: the file; "": none).
struct DropInPlace {
  Sources sources;
  bool needs_import = false;
};
Result<DropInPlace> containerd_drop_in_place(const std::string& path, std::string_view node_root,
                                             const std::string& drop_in,
                                             const std::string* config_text = nullptr);

// What config.toml's own text (not its imports) says before gpuctk writes a drop-in: its schema (0: an
// empty file, or comments only), and whether it holds gpuctk's runtime itself (runtime `settings.name`
// whose options.BinaryName is `settings.runtime_path`: an earlier gpuctk wrote it there).
struct ContainerdOwn {
  int version = 0;
  bool holds_runtime = false;
};
Result<ContainerdOwn> containerd_own(std::string_view text, const RuntimeSettings& settings);

Result<Edit> crio_configure(const std::optional<std::string>& old, const RuntimeSettings& settings,
                            const EditInputs& inputs);
Result<Edit> crio_remove(const std::string& old, const RuntimeSettings& settings, const Replaced& replaced);
Result<Edit> docker_configure(const std::optional<std::string>& old, const RuntimeSettings& settings,
                              const EditInputs& inputs);
Result<Edit> docker_remove(const std::string& old, const RuntimeSettings& settings, const Replaced& replaced);

// CRI-O's sources: the main file and the drop-in directory of `path` (configure.hpp, read_sources), read,
// and checked with check_crio_sources.
Result<Sources> crio_sources(const std::string& path);

// containerd's imports (containerd_imports.hpp): the files containerd reads after the config file at
// `path`, in its order (configure.hpp, read_sources, has the rules and bounds); a missing config: none.
// Absolute imports are read below `node_root` ("" or "/": as they are).
Result<Sources> containerd_sources(const std::string& path, std::string_view node_root);

// Pure: the sources parse, and the keys crio_configure reads from them have the right types. Errors name
// the source.
Result<void> check_crio_sources(const Sources& sources);

// The phrases of the summary, the same for every engine.

// `runtime "nvidia" (/usr/bin/gpuctk-runtime) added`, `… updated (was /usr/bin/nvidia-container-runtime)`.
inline std::string runtime_phrase(const RuntimeSettings& settings, bool added, std::string_view was) {
  std::string phrase = "runtime " + quote(settings.name) + " (" + settings.runtime_path + ")";
  phrase += added ? " added" : " updated";
  if (!was.empty() && was != settings.runtime_path) {
    phrase += " (was " + std::string(was) + ")";
  }
  return phrase;
}

// `default runtime set to "nvidia" (was "runc")`.
inline std::string default_phrase(std::string_view name, std::string_view was) {
  std::string phrase = "default runtime set to " + quote(name);
  if (!was.empty()) {
    phrase += " (was " + quote(was) + ")";
  }
  return phrase;
}

inline std::string removed_phrase(std::string_view name) {
  return "runtime " + quote(name) + " removed";
}

inline std::string default_unset_phrase(std::string_view name) {
  return "default runtime " + quote(name) + " unset";
}

// `default runtime "crun" restored`, when gpuctk's runtime was the default and `was` was before it.
inline std::string default_restored_phrase(std::string_view was) {
  return "default runtime " + quote(was) + " restored";
}

// `runtime "nvidia" restored (/usr/bin/nvidia-container-runtime)`: an entry gpuctk took over, put back.
inline std::string restored_phrase(std::string_view name, std::string_view binary) {
  return "runtime " + quote(name) + " restored" + (binary.empty() ? "" : " (" + std::string(binary) + ")");
}

// `runtime "nvidia" left alone: it runs /usr/local/bin/other now, not gpuctk's /usr/bin/gpuctk-runtime`.
inline std::string left_alone_note(std::string_view name, std::string_view binary_now,
                                   std::string_view ours) {
  return "runtime " + quote(name) + " left alone: it runs " + std::string(binary_now) +
         " now, not gpuctk's " + std::string(ours);
}

inline constexpr std::string_view k_cdi_enabled = "CDI enabled";

}  // namespace gpuctk::engine::detail
