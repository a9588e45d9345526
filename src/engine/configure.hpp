#pragma once
// `gpuctk runtime configure`: registers gpuctk's runtime shim (gpuctk-runtime) as a named runtime of a
// container engine by editing the engine's config file: containerd (config.toml, schema version 2 or 3),
// CRI-O (a drop-in file that gpuctk owns) or docker (daemon.json). Knows no GPUs.
//
// Rules for every engine:
//   - every key gpuctk does not own is kept (its value, and in daemon.json its place); gpuctk owns the
//     runtime entry of its name, and writes the default runtime and the CDI switch only when asked; a
//     new containerd entry starts as a copy of the default runtime's when that is runc (SystemdCgroup);
//   - a file that would not change is not written (its bytes, comments included, stay as they are);
//   - a file that must change is parsed and printed again: TOML comments are lost then, because toml++
//     keeps none (NVIDIA's `nvidia-ctk runtime configure` loses them too), and TOML keys come out
//     sorted; daemon.json keeps its key order and is printed with 4-space indentation;
//   - a malformed file, or a key gpuctk needs that holds another type (`runtimes` a string), is an error
//     naming the file, the key or the parser's line and column; the file is not touched.
//
// Backup and undo (state_files). The first time configure changes a file, the file's original bytes are
// kept as the backup (an original that did not exist as an empty "absent" marker), and no later run
// replaces them. Beside it, the record holds the exact bytes gpuctk last wrote, kept only while every
// change since the backup was gpuctk's: a configure run that finds the file different from both the
// record and the backup (someone edited it) deletes the record. unconfigure then:
//   - file == record (or still == backup): nothing but gpuctk changed it, so the backup is put back byte
//     for byte (an "absent" original: the file is deleted), and the backup and the record are deleted;
//   - otherwise: only gpuctk's keys are deleted (its runtime entry, and the default runtime when it names
//     that runtime; the CDI switch stays), the backup is kept for the administrator, the record deleted.
//     A CRI-O drop-in left with no key at all is deleted.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::engine {

enum class Engine : uint8_t { containerd, crio, docker };

// "containerd", "crio", "docker"; anything else: `unknown runtime "x" (want containerd, crio or docker)`.
Result<Engine> parse_engine(std::string_view name);

// The engine's name as parse_engine takes it.
std::string_view engine_name(Engine engine);

// /etc/containerd/config.toml, /etc/crio/crio.conf.d/99-gpuctk.conf, /etc/docker/daemon.json.
std::string default_config_path(Engine engine);

// The runtime name of a new entry: what a Kubernetes RuntimeClass handler and `docker run --runtime` use.
inline constexpr std::string_view k_default_runtime_name = "nvidia";

struct RuntimeSettings {
  std::string name = std::string(k_default_runtime_name);
  std::string runtime_path;  // absolute path of the gpuctk-runtime shim
  bool set_as_default = false;
  bool enable_cdi = false;
  int containerd_version = 2;  // the schema of a new (or empty) containerd file: 2 or 3
};

// A runtime name an engine and a RuntimeClass handler take: 1 to 63 letters, digits, '-', '_' or '.',
// starting and ending with a letter or digit. Errors read `runtime name "a b": …`.
Result<void> check_runtime_name(std::string_view name);

// An absolute, clean path. Errors read `runtime path "bin/x": not an absolute path`.
Result<void> check_runtime_path(std::string_view path);

struct ConfigureResult {
  bool changed = false;
  std::string text;     // the resulting file ("" when the result is that the file does not exist)
  std::string summary;  // one line: what changed and where, or "… unchanged …"
};

// Pure: the new file text from the old one (nullopt: there is no file). Returns `old` itself when nothing
// changes. Errors (settings, syntax with line and column, a key of the wrong type, a containerd schema
// version other than 2 or 3) do not name the file: the file-level functions add it.
Result<std::string> configured_text(Engine engine, const std::optional<std::string>& old,
                                    const RuntimeSettings& settings);

// Pure: `old` without gpuctk's keys (the runtime entry `settings.name`; the default runtime when it is
// that name). Returns `old` itself when there is nothing to remove, "" when nothing is left of a CRI-O
// drop-in. Only settings.name counts.
Result<std::string> removed_text(Engine engine, const std::string& old, const RuntimeSettings& settings);

// The files beside a config file that hold the backup and the record (see the top of this file). They
// are `<file>.gpuctk-backup`, `<file>.gpuctk-backup-absent` and `<file>.gpuctk-written` in the file's
// directory, except for a CRI-O file in a directory whose name ends in ".d": CRI-O parses every file in
// its drop-in directory, whatever the name, so they go to the parent directory instead
// (/etc/crio/99-gpuctk.conf.gpuctk-backup for /etc/crio/crio.conf.d/99-gpuctk.conf).
struct StateFiles {
  std::string backup;  // the original bytes
  std::string absent;  // empty marker: there was no original
  std::string record;  // the bytes gpuctk last wrote
};
StateFiles state_files(Engine engine, const std::string& path);

// The largest config file read (containerd's and docker's are a few KiB).
inline constexpr size_t k_max_config_file = size_t{16} << 20;

// File level: reads `path` (a missing file is made, and so is its directory when that directory's parent
// exists; a symbolic link is refused, since the atomic write would replace the link), keeps the backup,
// writes the record and the new file atomically and durably with the file's mode and owner (0644 and the
// caller for a new file). dry_run: computes the same result and writes nothing. Errors name the file.
Result<ConfigureResult> configure(Engine engine, const std::string& path, const RuntimeSettings& settings,
                                  bool dry_run);

// File level undo (see the top of this file). dry_run: computes the same result and writes nothing.
Result<ConfigureResult> unconfigure(Engine engine, const std::string& path, const RuntimeSettings& settings,
                                    bool dry_run);

}  // namespace gpuctk::engine
