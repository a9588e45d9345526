#pragma once
// `gpuctk runtime configure`: registers gpuctk's runtime shim (gpuctk-runtime) as a named runtime of a
// container engine by editing the engine's config file: containerd (config.toml, schema version 1, 2 or
// 3), CRI-O (a drop-in file that gpuctk owns) or docker (daemon.json). Knows no GPUs.
//
// Rules for every engine:
//   - every key gpuctk does not own is kept (its value, and in daemon.json its place); gpuctk owns the
//     runtime entry of its name, and writes the default runtime and the CDI switch only when asked;
//   - a new entry starts as a copy of the runtime it stands in for (containerd: the first runc runtime of
//     the default, runc and crun; CRI-O: see crio.cpp, which also fills in the keys an entry of gpuctk's
//     own drop-in lacks, since CRI-O reads it instead of the other files' entry, not over it);
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
// record and the backup (someone edited it) deletes the record. A third file keeps what gpuctk replaced
// key by key (replaced.hpp): the earlier values of the keys it set in an entry it took over, and the
// earlier default runtime. unconfigure then:
//   - file == record (or still == backup): nothing but gpuctk changed it, so the backup is put back byte
//     for byte (an "absent" original: the file is deleted), and the state files are deleted;
//   - otherwise: only gpuctk's keys are undone: an entry gpuctk made is deleted, an entry it took over
//     gets its earlier keys back, an entry pointed elsewhere since is left alone, the default runtime
//     gets its earlier value back (or goes, with no record) while it names gpuctk's runtime; the CDI
//     switch stays. The backup is kept for the administrator, the record deleted. A CRI-O drop-in left
//     with no key at all is deleted.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/replaced.hpp"
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

// How RuntimeSettings::drop_in was chosen.
enum class DropIn : uint8_t { given, by_default };

// Where configure reads containerd's effective configuration from (nvidia-ctk's --config-source).
enum class ConfigSource : uint8_t { file, command };

// "file" or "command"; anything else: `"x" is not a config source (want file or command)`.
Result<ConfigSource> parse_config_source(std::string_view text);

// The drop-in `runtime configure --runtime containerd` writes by default: `<config's directory>/conf.d/
// 99-zz-gpuctk.toml` (/etc/containerd/conf.d/99-zz-gpuctk.toml). "zz" sorts it after NVIDIA's
// 99-nvidia.toml when one glob import (conf.d/*.toml) reads both: gpuctk's runtime is the one containerd
// keeps, since the administrator asked for it last.
std::string default_drop_in_path(const std::string& config_path);
inline constexpr std::string_view k_drop_in_name = "99-zz-gpuctk.toml";

struct RuntimeSettings {
  std::string name = std::string(k_default_runtime_name);
  std::string runtime_path;  // absolute path of the gpuctk-runtime shim
  bool set_as_default = false;
  bool enable_cdi = false;
  int containerd_version = 2;  // the schema of a new (or empty) containerd file: 2 or 3 (1 is read only)
  // The node's root as this process sees it (gpuctk install's --host-root; "" or "/": this process's own):
  // an absolute containerd import is read below it, lexically (read_sources).
  std::string node_root;
  // containerd: the drop-in file gpuctk's runtime goes to, an absolute path ("": config.toml itself, as
  // before). configure writes it (the CRI plugin's table as config.toml and the imports read before it
  // leave it, copied whole, since containerd 1.x lets an import's table replace config.toml's, with
  // gpuctk's runtime) and adds it to config.toml's `imports` unless one of them names it already;
  // unconfigure undoes both, the import only when gpuctk added it. A config.toml that holds gpuctk's own
  // runtime (an earlier gpuctk wrote it there: options.BinaryName is `runtime_path`) has it taken out
  // first, as --remove would, so that one definition is left (the drop-in's).
  std::string drop_in;
  // DropIn::by_default (`runtime configure` without --drop-in-config): a schema-1 config.toml, which has
  // no imports, is edited itself instead, as NVIDIA's toolkit does.
  DropIn drop_in_choice = DropIn::given;
  // Where a new drop-in's CRI table comes from: config.toml and its imports read before the drop-in
  // (ConfigSource::file), or the engine's own merge of every file, `<executable_path> --config <config>
  // config dump` (ConfigSource::command; containerd_dump.hpp). Needs a drop-in.
  ConfigSource config_source = ConfigSource::file;
  std::string executable_path;  // "": "containerd", found on PATH
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

// A file of the engine's configuration that gpuctk reads but does not write.
struct SourceFile {
  std::string path;
  std::string text;
};

// The other files of the configuration that the written file belongs to, in the order the engine reads
// them: those before it and those after it (CRI-O: crio.conf and the other drop-ins; containerd: the files
// config.toml imports, all read after it). Empty for docker.
struct Sources {
  std::vector<SourceFile> before;
  std::vector<SourceFile> after;
};

// The sources of the file `path` (CRI-O and containerd; empty for docker). CRI-O reads its --config file
// (default /etc/crio/crio.conf; a missing one is skipped), then every file below its --config-dir (default
// /etc/crio/crio.conf.d) in lexical order, walking into subdirectories where their names sort, following
// links to files (pkg/config/config.go, UpdateFromPath: filepath.Walk). gpuctk takes a file in a directory
// "X.d" for a drop-in of the main file "X" (/etc/crio/crio.conf.d/99-gpuctk.conf: /etc/crio/crio.conf),
// and any other file for the main file itself, with "<file>.d" as its drop-in directory. The file at
// `path` itself is not read (gpuctk's drop-in must not feed itself). Bounded: k_max_config_file per file
// and for all together, k_max_source_files files, k_max_source_depth directory levels. Each file must be
// a regular file (a FIFO would block CRI-O too) and valid TOML whose runtime keys have the right types.
// Errors name the file: "read /etc/crio/crio.conf.d/50-x.conf: Permission denied", "read
// /etc/crio/crio.conf.d: Too many levels of symbolic links", "read /etc/crio/crio.conf.d/big.conf: larger
// than 16777216 bytes", "/etc/crio/crio.conf: Error while parsing ... at line 3, column 7".
// containerd reads `path`, then the files its `imports` name, breadth first: each import cleaned and, when
// relative, taken from the directory of the file that names it, one with a '*' as a glob (its matches by
// bytes), an absolute one read below `node_root`, a file already read skipped, a missing one skipped
// (containerd 2.x skips it; 1.x refuses to start); a missing `path` has none. Bounded: k_max_config_file per
// file and for all together, k_max_source_files files; an import of a file on its own way from `path` is an
// error, "<file>: imports /etc/containerd/config.toml, which imports it (an import loop)", and so are more
// files,
// "/etc/containerd/config.toml: imports more than 1024 files in all". configure() then warns, in its one
// line, when an import masks gpuctk's runtime or default runtime (containerd_imports.cpp says how
// containerd 1.x and 2.x merge them).
Result<Sources> read_sources(Engine engine, const std::string& path, std::string_view node_root = {});

inline constexpr size_t k_max_source_files = 1024;
inline constexpr int k_max_source_depth = 8;

// Pure: the new file text from the old one (nullopt: there is no file), given the engine's other files.
// Returns `old` itself when nothing changes. Errors (settings, syntax with line and column, a key of the
// wrong type, a containerd schema version other than 1, 2 or 3) do not name the file: the file-level
// functions add it; errors in a source name the source.
Result<std::string> configured_text(Engine engine, const std::optional<std::string>& old,
                                    const RuntimeSettings& settings, const Sources& sources = {});

// Pure: `old` without gpuctk's keys (replaced.hpp says how, from `replaced`, the record of what gpuctk
// replaced; with no record: the runtime entry `settings.name` is deleted, and the default runtime when it
// is that name). Returns `old` itself when there is nothing to remove, "" when nothing is left of a CRI-O
// drop-in. Only settings.name counts.
Result<std::string> removed_text(Engine engine, const std::string& old, const RuntimeSettings& settings,
                                 const Replaced& replaced = {});

// The files beside a config file that hold the backup and the records (see the top of this file). They
// are `<file>.gpuctk-backup`, `<file>.gpuctk-backup-absent`, `<file>.gpuctk-written`,
// `<file>.gpuctk-replaced` and `<file>.gpuctk-restart` in the file's directory, except for a CRI-O or
// containerd file in a directory whose name ends in ".d": CRI-O parses every file in its drop-in
// directory, whatever the name, and containerd every file a glob import (conf.d/*) matches, so they go to
// the parent directory instead (/etc/crio/99-gpuctk.conf.gpuctk-backup for
// /etc/crio/crio.conf.d/99-gpuctk.conf, /etc/containerd/99-gpuctk.toml.gpuctk-written for
// /etc/containerd/conf.d/99-gpuctk.toml).
struct StateFiles {
  std::string backup;    // the original bytes
  std::string absent;    // empty marker: there was no original
  std::string record;    // the bytes gpuctk last wrote
  std::string replaced;  // what gpuctk replaced, key by key (replaced.hpp)
  std::string restart;   // empty marker: the engine has not read the file since it changed (`gpuctk install`)
};
StateFiles state_files(Engine engine, const std::string& path);

// The largest config file read (containerd's and docker's are a few KiB).
inline constexpr size_t k_max_config_file = size_t{16} << 20;

// File level: reads `path` (a missing file is made, and so is its directory when that directory's parent
// exists; a symbolic link is refused, since the atomic write would replace the link) and its sources,
// keeps the backup, writes the records and the new file atomically and durably with the file's mode and owner
// (0644 and the caller for a new file). dry_run: computes the same result and writes nothing. Errors name the
// file.
Result<ConfigureResult> configure(Engine engine, const std::string& path, const RuntimeSettings& settings,
                                  bool dry_run);

// File level undo (see the top of this file). dry_run: computes the same result and writes nothing.
Result<ConfigureResult> unconfigure(Engine engine, const std::string& path, const RuntimeSettings& settings,
                                    bool dry_run);

}  // namespace gpuctk::engine
