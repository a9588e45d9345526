#include "engine/configure.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <memory>

#include "engine/containerd_dump.hpp"
#include "engine/engines.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::engine {

namespace {

using EditText = Result<detail::Edit> (*)(const std::optional<std::string>& old,
                                          const RuntimeSettings& settings, const detail::EditInputs& inputs);
using RemoveText = Result<detail::Edit> (*)(const std::string& old, const RuntimeSettings& settings,
                                            const Replaced& replaced);
using ReadSources = Result<Sources> (*)(const std::string& path, std::string_view node_root);

struct EngineRow {
  Engine engine;
  std::string_view name;          // --runtime, and the daemon to restart
  std::string_view default_path;  // --config
  EditText configure;
  RemoveText remove;
  ReadSources sources;  // nullptr: the file is the whole configuration gpuctk reads
  // --remove of a file gpuctk never changed leaves it alone (config.toml's `imports`: an import that was
  // there before is not gpuctk's to remove); otherwise its own keys go wherever they came from.
  bool undo_own_changes_only = false;
};

constexpr EngineRow k_engines[] = {
    // containerd's own default --config.
    {Engine::containerd, "containerd", "/etc/containerd/config.toml", detail::containerd_configure,
     detail::containerd_remove, detail::containerd_sources},
    // A drop-in of gpuctk's own in CRI-O's default --config-dir; "99-" sorts it after the usual drop-ins,
    // so that its default runtime wins. CRI-O's other files are read for what the handler inherits.
    {Engine::crio, "crio", "/etc/crio/crio.conf.d/99-gpuctk.conf", detail::crio_configure,
     detail::crio_remove,
     [](const std::string& path, std::string_view) { return detail::crio_sources(path); }},
    // dockerd's default --config-file.
    {Engine::docker, "docker", "/etc/docker/daemon.json", detail::docker_configure, detail::docker_remove,
     nullptr},
};

// containerd with a drop-in (RuntimeSettings::drop_in): the drop-in, and config.toml's `imports`.
constexpr EngineRow k_containerd_drop_in = {
    Engine::containerd,        "containerd", "", detail::containerd_drop_in_configure,
    detail::containerd_remove, nullptr};
constexpr EngineRow k_containerd_import = {Engine::containerd,
                                           "containerd",
                                           "",
                                           detail::containerd_add_import,
                                           detail::containerd_remove_import,
                                           nullptr,
                                           true};

const EngineRow& row_of(Engine engine) {
  for (const EngineRow& row : k_engines) {
    if (row.engine == engine) {
      return row;
    }
  }
  return k_engines[0];  // unreachable: every enumerator has a row
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

bool is_alnum(char c) {
  return is_name_char(c) && c != '-' && c != '_' && c != '.';
}

// A new config file gets the mode engines' packages give theirs.
constexpr mode_t k_new_file_mode = 0644;

// A file as read: its bytes (nullopt: there is none), and the mode and owner its replacement keeps.
struct FileState {
  std::optional<std::string> text;
  mode_t mode = k_new_file_mode;
  std::optional<FileOwner> owner;  // only when it is not this process's own (only root can give a file away)
};

// A directory opened once for one configure or unconfigure: every file of the run (the config file, its
// backup and records) is read, written and removed through this fd, so a directory renamed or replaced by
// a symbolic link meanwhile cannot send one of them elsewhere. A directory that does not exist (yet) has
// no fd: its files read as missing, and create() makes it before the first write.
class Dir {
 public:
  explicit Dir(std::string path) : m_path(std::move(path)) {}

  // Errors are "read <file>: <why>" for the first file the run would read there.
  Result<void> open(const std::string& first_file) {
    m_fd.reset(::open(m_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!m_fd && errno != ENOENT) {
      return fail_errno("read " + first_file, errno);
    }
    return {};
  }

  // Made when missing, its own parent being there already: a host with no CRI-O drop-in directory yet,
  // or no /etc/docker. Nothing deeper: a mistyped path stays an error.
  Result<void> create() {
    if (m_fd) {
      return {};
    }
    if (::mkdir(m_path.c_str(), 0755) != 0 && errno != EEXIST) {
      return fail_errno("create directory " + m_path, errno);
    }
    const UniqueFd parent(::open(parent_path(m_path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (parent) {
      ::fsync(parent.get());
    }
    m_fd.reset(::open(m_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return m_fd ? Result<void>{} : fail_errno("open directory " + m_path, errno);
  }

  [[nodiscard]] int fd() const { return m_fd.get(); }
  [[nodiscard]] bool exists() const { return static_cast<bool>(m_fd); }
  [[nodiscard]] std::string path_of(const std::string& name) const {
    return m_path == "/" ? "/" + name : m_path + "/" + name;
  }

 private:
  std::string m_path;
  UniqueFd m_fd;
};

// A file of a run: its directory and its name there.
struct File {
  Dir* dir;
  std::string name;
  [[nodiscard]] std::string path() const { return dir->path_of(name); }
};

Result<FileState> read_state(const File& file) {
  if (!file.dir->exists()) {
    return FileState{};
  }
  const std::string path = file.path();
  // O_NOFOLLOW: the atomic write renames over the name, which would replace a link with a file.
  const UniqueFd fd(
      ::openat(file.dir->fd(), file.name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT) {
      return FileState{};
    }
    struct stat st {};
    if (err == ELOOP && ::fstatat(file.dir->fd(), file.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode)) {
      return fail(
          "read " + path +
          ": a symbolic link (the file is replaced atomically, which would replace the link; name the "
          "file it points to)");
    }
    return fail_errno("read " + path, err);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail_errno("read " + path, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return fail("read " + path + ": not a regular file");
  }
  FileState state;
  GPUCTK_TRY_ASSIGN(state.text, read_fd(fd.get(), path, k_max_config_file));
  state.mode = st.st_mode & 07777;
  if (st.st_uid != ::geteuid() || st.st_gid != ::getegid()) {
    state.owner = FileOwner{st.st_uid, st.st_gid};
  }
  return state;
}

Result<bool> exists(const File& file) {
  struct stat st {};
  if (!file.dir->exists()) {
    return false;
  }
  if (::fstatat(file.dir->fd(), file.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    return true;
  }
  if (errno == ENOENT) {
    return false;
  }
  return fail_errno("stat " + file.path(), errno);
}

// Deletes the file (nothing to do when it is missing), durably: the directory is synced after the unlink.
Result<void> remove_file(const File& file) {
  if (!file.dir->exists()) {
    return {};
  }
  if (::unlinkat(file.dir->fd(), file.name.c_str(), 0) != 0) {
    if (errno == ENOENT) {
      return {};
    }
    return fail_errno("remove " + file.path(), errno);
  }
  ::fsync(file.dir->fd());
  return {};
}

Result<void> write_durably(const File& file, std::string_view text, const FileState& like) {
  GPUCTK_TRY(file.dir->create());
  return write_file_atomic_at(file.dir->fd(), file.name, file.path(), text, like.mode, Durability::durable,
                              like.owner);
}

// What the state files beside a config file hold.
struct Saved {
  std::optional<FileState> backup;    // the original
  bool absent = false;                // there was no original
  std::optional<std::string> record;  // what gpuctk last wrote
  Replaced replaced;                  // what gpuctk replaced (empty: no such file)
};

// The config file and its state files, each in the directory opened once for the run (the same
// directory, except for a CRI-O drop-in: see state_files).
struct RunFiles {
  Dir config_dir;
  Dir state_dir;
  bool same_dir;
  File config, backup, absent, record, replaced;
};

Result<std::unique_ptr<RunFiles>> open_run_files(Engine engine, const std::string& path) {
  const StateFiles names = state_files(engine, path);
  const std::string config_dir = parent_path(path);
  const std::string state_dir = parent_path(names.backup);
  auto run = std::make_unique<RunFiles>(RunFiles{.config_dir = Dir(config_dir),
                                                 .state_dir = Dir(state_dir),
                                                 .same_dir = config_dir == state_dir,
                                                 .config = {},
                                                 .backup = {},
                                                 .absent = {},
                                                 .record = {},
                                                 .replaced = {}});
  GPUCTK_TRY(run->config_dir.open(path));
  if (!run->same_dir) {
    GPUCTK_TRY(run->state_dir.open(names.backup));
  }
  Dir* state = run->same_dir ? &run->config_dir : &run->state_dir;
  const auto name_of = [](const std::string& p) { return p.substr(p.rfind('/') + 1); };
  run->config = File{&run->config_dir, name_of(path)};
  run->backup = File{state, name_of(names.backup)};
  run->absent = File{state, name_of(names.absent)};
  run->record = File{state, name_of(names.record)};
  run->replaced = File{state, name_of(names.replaced)};
  return run;
}

Result<Saved> read_saved(const RunFiles& files) {
  Saved saved;
  GPUCTK_TRY_ASSIGN(FileState backup, read_state(files.backup));
  if (backup.text) {
    saved.backup = std::move(backup);
  }
  GPUCTK_TRY_ASSIGN(saved.absent, exists(files.absent));
  GPUCTK_TRY_ASSIGN(FileState record, read_state(files.record));
  saved.record = std::move(record.text);
  GPUCTK_TRY_ASSIGN(const FileState replaced, read_state(files.replaced));
  if (replaced.text) {
    auto parsed = parse_replaced(*replaced.text);
    if (!parsed) {
      return fail_with(files.replaced.path(), parsed.error());
    }
    saved.replaced = std::move(*parsed);
  }
  return saved;
}

// The record of what gpuctk replaced, written (or deleted when it says nothing) before the file it
// describes: after a crash between the two it names a binary the file does not hold, and --remove leaves
// that entry alone or deletes it, never restores a wrong value.
Result<void> write_replaced(const File& file, const Replaced& replaced, const FileState& like) {
  return replaced.empty() ? remove_file(file) : write_durably(file, print_replaced(replaced), like);
}

// Whether `current` is what gpuctk left, or still the original: nobody else changed the file since the
// backup was taken.
bool only_gpuctk_changed(const std::optional<std::string>& current, const Saved& saved) {
  if (saved.backup) {
    return current && (*current == *saved.backup->text || (saved.record && *current == *saved.record));
  }
  if (saved.absent) {
    return !current || (saved.record && *current == *saved.record);
  }
  return false;
}

std::string restart(const EngineRow& row) {
  return "restart " + std::string(row.name);
}

std::string with_notes(std::string line, const std::vector<std::string>& notes) {
  for (const std::string& note : notes) {
    line += "; " + note;
  }
  return line;
}

}  // namespace

Result<Engine> parse_engine(std::string_view name) {
  for (const EngineRow& row : k_engines) {
    if (row.name == name) {
      return row.engine;
    }
  }
  return fail("unknown runtime " + quote(name) + " (want containerd, crio or docker)");
}

std::string_view engine_name(Engine engine) {
  return row_of(engine).name;
}

std::string default_config_path(Engine engine) {
  return std::string(row_of(engine).default_path);
}

Result<void> check_runtime_name(std::string_view name) {
  // RuntimeClass handlers are DNS labels (63 bytes); engines take any of these characters.
  if (name.empty() || name.size() > 63 || !std::ranges::all_of(name, is_name_char) ||
      !is_alnum(name.front()) || !is_alnum(name.back())) {
    return fail(
        "runtime name " + quote(name) +
        ": want 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit");
  }
  return {};
}

Result<void> check_runtime_path(std::string_view path) {
  if (!path.starts_with('/')) {
    return fail("runtime path " + quote(path) + ": not an absolute path");
  }
  if (std::ranges::any_of(path, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return fail("runtime path " + quote(path) + ": has a control character");
  }
  if (!is_clean_path(path)) {
    return fail("runtime path " + quote(path) + ": not a clean path (no \"//\", \".\" or \"..\" components)");
  }
  return {};
}

namespace {

// configured_text with everything configure() writes besides the text (what changed, the notes, the
// record): one path from the settings to the new file, so configured_text's tests test configure()'s.
Result<detail::Edit> configured_edit(Engine engine, const std::optional<std::string>& old,
                                     const RuntimeSettings& settings, const detail::EditInputs& inputs) {
  GPUCTK_TRY(check_runtime_name(settings.name));
  GPUCTK_TRY(check_runtime_path(settings.runtime_path));
  return row_of(engine).configure(old, settings, inputs);
}

}  // namespace

Result<std::string> configured_text(Engine engine, const std::optional<std::string>& old,
                                    const RuntimeSettings& settings, const Sources& sources) {
  const Replaced none;
  GPUCTK_TRY_ASSIGN(detail::Edit edit,
                    configured_edit(engine, old, settings, {.sources = sources, .replaced = none}));
  return std::move(edit.text);
}

Result<std::string> removed_text(Engine engine, const std::string& old, const RuntimeSettings& settings,
                                 const Replaced& replaced) {
  GPUCTK_TRY(check_runtime_name(settings.name));
  GPUCTK_TRY_ASSIGN(detail::Edit edit, row_of(engine).remove(old, settings, replaced));
  return std::move(edit.text);
}

Result<Sources> read_sources(Engine engine, const std::string& path, std::string_view node_root) {
  const EngineRow& row = row_of(engine);
  return row.sources != nullptr ? row.sources(path, node_root) : Result<Sources>(Sources{});
}

StateFiles state_files(Engine engine, const std::string& path) {
  const auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);  // with its '/'
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  // CRI-O reads every file below its drop-in directory (pkg/config: filepath.Walk, no name filter), and
  // containerd every file a glob import matches (conf.d/* would take a JSON record for TOML).
  if (engine != Engine::docker && dir.size() > 1 &&
      std::string_view(dir).substr(0, dir.size() - 1).ends_with(".d")) {
    dir = parent_path(dir.substr(0, dir.size() - 1));
    if (!dir.ends_with('/')) {
      dir += '/';
    }
  }
  const std::string base = dir + name;
  return StateFiles{.backup = base + ".gpuctk-backup",
                    .absent = base + ".gpuctk-backup-absent",
                    .record = base + ".gpuctk-written",
                    .replaced = base + ".gpuctk-replaced",
                    .restart = base + ".gpuctk-restart"};
}

namespace {

// `sources_of` is called once the file is read: an error of the file itself comes first.
Result<ConfigureResult> configure_file(const EngineRow& row, const std::string& path,
                                       const RuntimeSettings& settings, bool dry_run,
                                       const std::function<Result<Sources>()>& sources_of) {
  const Engine engine = row.engine;
  GPUCTK_TRY_ASSIGN(const auto run, open_run_files(engine, path));
  const RunFiles& files = *run;
  GPUCTK_TRY_ASSIGN(const FileState file, read_state(files.config));
  GPUCTK_TRY_ASSIGN(const Sources sources, sources_of());
  GPUCTK_TRY_ASSIGN(const Saved saved, read_saved(files));
  auto edit =
      row.configure(file.text, settings, detail::EditInputs{.sources = sources, .replaced = saved.replaced});
  if (!edit) {
    return fail_with(path, edit.error());
  }
  ConfigureResult result{.changed = !edit->changes.empty(), .text = std::move(edit->text), .summary = {}};
  const std::string prefix = std::string(row.name) + ": ";
  if (!result.changed) {
    result.summary = with_notes(prefix + path + " unchanged: runtime " + quote(settings.name) + " (" +
                                    settings.runtime_path + ") is already configured",
                                edit->notes);
    return result;
  }
  const std::string what = join(edit->changes, ", ");
  if (dry_run) {
    result.summary = with_notes(prefix + what + "; dry run: " + path + " not written", edit->notes);
    return result;
  }

  std::string written = path + " written";
  const bool first = !saved.backup && !saved.absent && !saved.record;
  if (first) {
    if (file.text) {
      GPUCTK_TRY(write_durably(files.backup, *file.text, file));
      written += " (the original kept as " + files.backup.path() + ")";
    } else {
      GPUCTK_TRY(write_durably(files.absent, "", FileState{}));
    }
  }
  // The record, written before the file: a crash between the two leaves a record that matches nothing,
  // and --remove then falls back to deleting gpuctk's keys, which is always safe.
  if (first || only_gpuctk_changed(file.text, saved)) {
    GPUCTK_TRY(write_durably(files.record, result.text, file));
  } else {
    GPUCTK_TRY(remove_file(files.record));
  }
  GPUCTK_TRY(write_replaced(files.replaced, edit->replaced, file));
  GPUCTK_TRY(write_durably(files.config, result.text, file));
  result.summary = with_notes(prefix + what + "; " + written, edit->notes) + "; " + restart(row);
  return result;
}

Result<ConfigureResult> unconfigure_file(const EngineRow& row, const std::string& path,
                                         const RuntimeSettings& settings, bool dry_run) {
  const Engine engine = row.engine;
  GPUCTK_TRY_ASSIGN(const auto run, open_run_files(engine, path));
  const RunFiles& files = *run;
  GPUCTK_TRY_ASSIGN(const FileState file, read_state(files.config));
  GPUCTK_TRY_ASSIGN(const Saved saved, read_saved(files));
  const std::string prefix = std::string(row.name) + ": ";
  const std::string dry = dry_run ? "dry run: " : "";
  ConfigureResult result;

  if (only_gpuctk_changed(file.text, saved)) {
    // Nobody but gpuctk changed the file: the original comes back byte for byte.
    if (saved.backup) {
      result.text = *saved.backup->text;
      result.changed = file.text != saved.backup->text;
      result.summary =
          prefix + dry + path + (dry_run ? " would be" : "") + " restored from " + files.backup.path();
      if (!dry_run && result.changed) {
        GPUCTK_TRY(write_durably(files.config, result.text, *saved.backup));
      }
    } else {
      result.changed = file.text.has_value();
      result.summary =
          prefix + dry + path + (dry_run ? " would be" : "") + " deleted (it did not exist before)";
      if (!dry_run) {
        GPUCTK_TRY(remove_file(files.config));
      }
    }
    if (!dry_run) {
      GPUCTK_TRY(remove_file(files.record));
      GPUCTK_TRY(remove_file(files.replaced));
      GPUCTK_TRY(remove_file(files.backup));
      GPUCTK_TRY(remove_file(files.absent));
    }
    if (!result.changed) {
      result.summary = prefix + path + " unchanged: it is as it was before gpuctk configured it";
    } else if (!dry_run) {
      result.summary += "; " + restart(row);
    }
    return result;
  }

  // Someone else changed the file too (or gpuctk never backed it up): only gpuctk's keys go.
  if (row.undo_own_changes_only && !saved.backup && !saved.absent) {
    result.summary = prefix + path + " unchanged: gpuctk did not change it";
  } else if (!file.text) {
    result.summary = prefix + path + " unchanged: it does not exist";
  } else {
    auto edit = row.remove(*file.text, settings, saved.replaced);
    if (!edit) {
      return fail_with(path, edit.error());
    }
    result.changed = !edit->changes.empty();
    result.text = std::move(edit->text);
    if (!dry_run) {
      // What is left of the record: what it says of other runtime names.
      GPUCTK_TRY(write_replaced(files.replaced, edit->replaced, file));
    }
    if (!result.changed) {
      result.summary =
          with_notes(prefix + path + " unchanged: no runtime " + quote(settings.name) + " of gpuctk's in it",
                     edit->notes);
    } else {
      // Only a CRI-O drop-in is ever left empty: it held nothing but gpuctk's runtime.
      const bool delete_file = result.text.empty();
      result.summary = prefix + join(edit->changes, ", ") + "; " + dry + path +
                       (dry_run       ? " not written"
                        : delete_file ? " deleted (nothing else was in it)"
                                      : " written");
      if (saved.backup) {
        result.summary +=
            " (it was changed since gpuctk wrote it; the original stays in " + files.backup.path() + ")";
      }
      result.summary = with_notes(std::move(result.summary), edit->notes);
      if (!dry_run) {
        GPUCTK_TRY(delete_file ? remove_file(files.config) : write_durably(files.config, result.text, file));
        result.summary += "; " + restart(row);
      }
    }
  }
  if (!dry_run) {
    GPUCTK_TRY(remove_file(files.record));
  }
  return result;
}

// Two results as one: both changes, the drop-in's text (what --dry-run prints), each summary a line.
ConfigureResult joined(ConfigureResult drop_in, const std::optional<ConfigureResult>& config) {
  if (config) {
    drop_in.changed = drop_in.changed || config->changed;
    drop_in.summary += "\n" + config->summary;
  }
  return drop_in;
}

Result<void> check_drop_in(Engine engine, const std::string& drop_in) {
  if (engine != Engine::containerd) {
    return fail("a drop-in file is for containerd only");
  }
  if (!drop_in.starts_with('/') || !is_clean_path(drop_in)) {
    return fail("drop-in " + quote(drop_in) + ": not a clean absolute path");
  }
  return {};
}

}  // namespace

namespace {

// The settings of config.toml itself, with no drop-in.
RuntimeSettings in_place(RuntimeSettings settings) {
  settings.drop_in.clear();
  return settings;
}

// An earlier gpuctk's runtime in config.toml itself taken out, as --remove would (the original bytes back
// when only gpuctk changed the file, else gpuctk's keys alone), before the drop-in gets it: else two
// definitions, and --remove of the drop-in would leave config.toml's. The line says where it went; `text`
// is config.toml's text after it ("": no file).
Result<std::optional<ConfigureResult>> move_out_of_config(const std::string& path,
                                                          const RuntimeSettings& settings, bool dry_run,
                                                          std::string& text) {
  GPUCTK_TRY_ASSIGN(ConfigureResult moved,
                    unconfigure_file(row_of(Engine::containerd), path, in_place(settings), dry_run));
  text = moved.text;
  const std::string prefix = "containerd: ";
  moved.summary = prefix + "runtime " + quote(settings.name) + " moves from " + path + " to " +
                  settings.drop_in + ": " + moved.summary.substr(prefix.size());
  return std::optional<ConfigureResult>(std::move(moved));
}

// Two or three results as one.
ConfigureResult joined_all(std::optional<ConfigureResult> first, ConfigureResult drop_in,
                           const std::optional<ConfigureResult>& config) {
  ConfigureResult out = joined(std::move(drop_in), config);
  if (first) {
    out.changed = out.changed || first->changed;
    out.summary = first->summary + "\n" + out.summary;
  }
  return out;
}

}  // namespace

Result<ConfigSource> parse_config_source(std::string_view text) {
  if (text == "file") {
    return ConfigSource::file;
  }
  if (text == "command") {
    return ConfigSource::command;
  }
  return fail(quote(text) + " is not a config source (want file or command)");
}

std::string default_drop_in_path(const std::string& config_path) {
  return clean_path(parent_path(config_path) + "/conf.d/" + std::string(k_drop_in_name));
}

Result<ConfigureResult> configure(Engine engine, const std::string& path, const RuntimeSettings& settings,
                                  bool dry_run) {
  GPUCTK_TRY(check_runtime_name(settings.name));
  GPUCTK_TRY(check_runtime_path(settings.runtime_path));
  if (settings.config_source == ConfigSource::command &&
      (settings.drop_in.empty() || engine != Engine::containerd)) {
    return fail(
        "config source \"command\": containerd's `config dump` is every file merged, for a drop-in "
        "only (gpuctk never writes it into " +
        path + ")");
  }
  if (settings.drop_in.empty()) {
    return configure_file(row_of(engine), path, settings, dry_run,
                          [&] { return read_sources(engine, path, settings.node_root); });
  }
  GPUCTK_TRY(check_drop_in(engine, settings.drop_in));
  GPUCTK_TRY_ASSIGN(detail::DropInPlace place,
                    detail::containerd_drop_in_place(path, settings.node_root, settings.drop_in));
  // sources.before starts with config.toml's own text when there is one.
  const bool has_config = !place.sources.before.empty() && place.sources.before.front().path == path;
  detail::ContainerdOwn own;
  if (has_config) {
    auto read = detail::containerd_own(place.sources.before.front().text, settings);
    if (!read) {
      return fail_with(path, read.error());
    }
    own = *read;
  }
  if (own.version == 1 && settings.drop_in_choice == DropIn::by_default) {
    // Schema 1 has no imports (NVIDIA's toolkit writes no drop-in for it either): config.toml itself.
    if (settings.config_source == ConfigSource::command) {
      return fail(path + ": schema 1 has no imports: config source \"command\" needs a drop-in");
    }
    return configure_file(row_of(engine), path, in_place(settings), dry_run,
                          [&] { return read_sources(engine, path, settings.node_root); });
  }
  std::optional<ConfigureResult> moved;
  if (own.holds_runtime) {
    std::string text;
    GPUCTK_TRY_ASSIGN(moved, move_out_of_config(path, settings, dry_run, text));
    GPUCTK_TRY_ASSIGN(place,
                      detail::containerd_drop_in_place(path, settings.node_root, settings.drop_in, &text));
  }
  if (settings.config_source == ConfigSource::command) {
    // A new drop-in's CRI table: containerd's own merge (the files after the drop-in still warn).
    GPUCTK_TRY_ASSIGN(std::string dump, containerd_config_dump(settings.executable_path, path));
    place.sources.before = {SourceFile{.path = "containerd config dump", .text = std::move(dump)}};
  }
  // The drop-in before the import: a crash between the two leaves a file nothing reads yet.
  GPUCTK_TRY_ASSIGN(ConfigureResult drop_in,
                    configure_file(k_containerd_drop_in, settings.drop_in, settings, dry_run,
                                   [&] { return Result<Sources>(place.sources); }));
  std::optional<ConfigureResult> config;
  if (place.needs_import) {
    GPUCTK_TRY_ASSIGN(config, configure_file(k_containerd_import, path, settings, dry_run,
                                             [] { return Result<Sources>(Sources{}); }));
  }
  return joined_all(std::move(moved), std::move(drop_in), config);
}

Result<ConfigureResult> unconfigure(Engine engine, const std::string& path, const RuntimeSettings& settings,
                                    bool dry_run) {
  GPUCTK_TRY(check_runtime_name(settings.name));
  if (settings.drop_in.empty()) {
    return unconfigure_file(row_of(engine), path, settings, dry_run);
  }
  GPUCTK_TRY(check_drop_in(engine, settings.drop_in));
  // What config.toml itself holds, before and after the drop-in and its import are undone.
  const auto own_of = [&]() -> Result<detail::ContainerdOwn> {
    GPUCTK_TRY_ASSIGN(const std::optional<std::string> text,
                      read_regular_at(AT_FDCWD, path.c_str(), path, k_max_config_file));
    if (!text) {
      return detail::ContainerdOwn{};
    }
    auto own = detail::containerd_own(*text, settings);
    if (!own) {
      return fail_with(path, own.error());
    }
    return own;
  };
  GPUCTK_TRY_ASSIGN(const detail::ContainerdOwn before, own_of());
  if (before.version == 1 && settings.drop_in_choice == DropIn::by_default) {
    return unconfigure_file(row_of(engine), path, in_place(settings), dry_run);  // as configure did
  }
  GPUCTK_TRY_ASSIGN(ConfigureResult drop_in,
                    unconfigure_file(k_containerd_drop_in, settings.drop_in, settings, dry_run));
  GPUCTK_TRY_ASSIGN(const ConfigureResult config,
                    unconfigure_file(k_containerd_import, path, settings, dry_run));
  // An earlier gpuctk's runtime in config.toml itself (no run has moved it to the drop-in yet) goes too.
  GPUCTK_TRY_ASSIGN(const detail::ContainerdOwn after, own_of());
  std::optional<ConfigureResult> own;
  if (after.holds_runtime) {
    GPUCTK_TRY_ASSIGN(own, unconfigure_file(row_of(engine), path, in_place(settings), dry_run));
  }
  return joined(joined(std::move(drop_in), config), own);
}

}  // namespace gpuctk::engine
