#include "ldcache/library_search.hpp"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <set>
#include <span>

#include "ldcache/cache_file.hpp"
#include "ldcache/linker_config.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::ldcache {

using rootfs::directory_id;
using rootfs::FileId;
using rootfs::FileKind;
using rootfs::FollowLast;
using rootfs::ImageBudget;
using rootfs::k_scratch_size;
using rootfs::open_image_path;
using rootfs::open_in_root;
using rootfs::read_image_file;
using rootfs::remove_file;
using rootfs::Root;
using rootfs::run_sandboxed;
using rootfs::SandboxLimits;
using rootfs::SandboxView;
using rootfs::Scratch;
using rootfs::split_container_path;
using rootfs::temporary_name;
using rootfs::write_file;

namespace {

// The directories an image's own ldconfig adds after everything its configuration names, in its order.
// Debian's glibc (and so Ubuntu's) has its multiarch directories first and no lib64 (what its ldconfig
// -v lists for an empty configuration); upstream glibc turns its /lib64 and /usr/lib64 into lib, lib64
// and the other ABI's directory (libx32 on x86-64, libilp32 on arm64) of each.
#if defined(__aarch64__)
#define GPUCTK_TRIPLET "aarch64-linux-gnu"
#define GPUCTK_OTHER_ABI "ilp32"
#else
#define GPUCTK_TRIPLET "x86_64-linux-gnu"
#define GPUCTK_OTHER_ABI "x32"
#endif
constexpr const char* k_debian_system_dirs[] = {
    "/lib/" GPUCTK_TRIPLET,      // multiarch
    "/usr/lib/" GPUCTK_TRIPLET,  // multiarch
    "/lib",
    "/usr/lib",
};
constexpr const char* k_glibc_system_dirs[] = {
    "/lib",     "/lib64",     "/lib" GPUCTK_OTHER_ABI,      // from /lib64
    "/usr/lib", "/usr/lib64", "/usr/lib" GPUCTK_OTHER_ABI,  // from /usr/lib64
};
// What makes an image Debian-like (Debian, Ubuntu and their derivatives), as NVIDIA's hook tells too.
constexpr const char* k_debian_marker = "/etc/debian_version";

// How a linker cache that ldconfig wrote starts: glibc's format ("glibc-ld.so.cache" and its version,
// all an ldconfig of glibc 2.32 or later writes), or the old format that the "compat" one begins with.
constexpr std::string_view k_ld_cache_magics[] = {k_new_format_magic, k_old_format_magic};
// The largest cache installed (the scratch tmpfs holds no more anyway).
constexpr size_t k_max_ld_cache_size = k_scratch_size;

bool is_dir_in_root(const Root& root, std::string_view path) {
  return open_in_root(root, path, O_PATH | O_DIRECTORY, FollowLast::yes).has_value();
}

// The image's system directories (see above) that exist.
std::vector<std::string> image_system_dirs(const Root& root) {
  const auto marker = open_in_root(root, k_debian_marker, O_PATH, FollowLast::yes);
  struct stat st {};
  const bool debian = marker && ::fstat(marker->get(), &st) == 0 && S_ISREG(st.st_mode);
  std::vector<std::string> dirs;
  for (const char* dir : debian ? std::span<const char* const>(k_debian_system_dirs)
                                : std::span<const char* const>(k_glibc_system_dirs)) {
    if (is_dir_in_root(root, dir)) {
      dirs.emplace_back(dir);
    }
  }
  return dirs;
}

// `folders` checked (container paths, no newline: they become lines of a file) without duplicates.
Result<std::vector<std::string>> checked_folders(const std::vector<std::string>& folders) {
  std::vector<std::string> unique;
  for (const auto& folder : folders) {
    if (auto parts = split_container_path(folder); !parts) {
      return fail_with("--folder", parts.error());
    }
    if (folder.find('\n') != std::string::npos) {
      return fail("--folder " + folder + ": contains a newline");
    }
    if (std::ranges::find(unique, folder) == unique.end()) {
      unique.push_back(folder);
    }
  }
  return unique;
}

// The members of `folders` that are none of `known` (paths of the image, compared as the directories
// they lead to, or as text where there is none), nor an earlier member: what the loader does not search
// yet. Each distinct path is resolved once (the root does not change meanwhile: the container does not
// run yet). Errors: a spent `budget`.
Result<std::vector<std::string>> new_folders(const Root& root, const std::vector<std::string>& folders,
                                             const std::vector<std::string>& known, ImageBudget& budget) {
  std::set<FileId> ids;
  std::set<std::string_view> resolved;
  for (const auto& dir : known) {
    if (!resolved.insert(dir).second) {
      continue;
    }
    if (auto id = directory_id(root, dir, budget)) {
      ids.insert(*id);
    }
  }
  std::vector<std::string> out;
  for (const auto& folder : folders) {
    const auto id = directory_id(root, folder, budget);
    if (id ? !ids.insert(*id).second : std::ranges::find(known, folder) != known.end()) {
      continue;
    }
    out.push_back(folder);
  }
  GPUCTK_TRY(budget.check());
  return out;
}

// The identity of the file `path` when it is one (to leave gpuctk's own drop-ins out of the image's
// configuration).
std::optional<FileId> file_id(const Root& root, std::string_view path) {
  auto fd = open_in_root(root, path, O_PATH, FollowLast::no);
  struct stat st {};
  if (!fd || ::fstat(fd->get(), &st) != 0) {
    return std::nullopt;
  }
  return FileId{st.st_dev, st.st_ino};
}

// The ELF class and machine of the libraries this build's loader (and so the image's musl) loads.
#if defined(__aarch64__)
constexpr unsigned char k_elf_class = ELFCLASS64;
constexpr uint16_t k_elf_machine = EM_AARCH64;
#else
constexpr unsigned char k_elf_class = ELFCLASS64;
constexpr uint16_t k_elf_machine = EM_X86_64;
#endif
// How many entries of a folder are looked at to tell whose libraries it holds.
constexpr size_t k_max_folder_scan = 4096;

// Whether the folder `dir` of the image holds shared libraries ("*.so*" regular files, links not
// followed) and all of them are for another machine, such as the driver's 32-bit libraries. musl takes
// the first file of the wanted name on its path and fails on a foreign one instead of searching on, so
// such a folder listed first would hide the libraries it can load.
bool holds_only_foreign_libraries(const Root& root, const std::string& dir) {
  auto fd = open_in_root(root, dir, O_RDONLY | O_DIRECTORY, FollowLast::yes);
  if (!fd) {
    return false;
  }
  DIR* stream = ::fdopendir(fd->get());
  if (stream == nullptr) {
    return false;
  }
  fd->release();
  size_t ours = 0;
  size_t foreign = 0;
  size_t seen = 0;
  while (const dirent* entry = ::readdir(stream)) {
    if (++seen > k_max_folder_scan || ours > 0) {
      break;
    }
    if (std::string_view(entry->d_name).find(".so") == std::string_view::npos) {
      continue;
    }
    // Nothing but a regular file is ever opened for reading.
    const auto file = open_regular_at(::dirfd(stream), entry->d_name, entry->d_name);
    unsigned char header[EI_NIDENT + 4]{};
    if (!file || ::pread(file->get(), header, sizeof header, 0) != static_cast<ssize_t>(sizeof header) ||
        std::memcmp(header, ELFMAG, SELFMAG) != 0) {
      continue;
    }
    const auto machine =
        static_cast<uint16_t>(header[EI_NIDENT + 2] | (header[EI_NIDENT + 3] << 8));  // little-endian
    (header[EI_CLASS] == k_elf_class && machine == k_elf_machine ? ours : foreign) += 1;
  }
  ::closedir(stream);
  return foreign > 0 && ours == 0;
}

// The path of the open file `fd` as this process's /proc names it ("" when it cannot be read).
std::string path_of_fd(int fd) {
  std::string path(PATH_MAX, '\0');
  const ssize_t length =
      ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), path.data(), path.size());
  path.resize(length > 0 ? static_cast<size_t>(length) : 0);
  return path;
}

// The directory the sandbox's scratch tmpfs is attached on, made in the image's /etc (mode 0700, a
// random name) and removed when this is dropped: the image sees it empty, for the length of one run.
// Its path is the one /etc resolved to, without symlinks: the sandbox and the program resolve it
// again inside the root, where a link on the way (an /etc that is a link to a procfs path) may lead
// elsewhere or nowhere.
class ScratchMountPoint {
 public:
  static Result<ScratchMountPoint> make(const Root& root) {
    ScratchMountPoint point;
    GPUCTK_TRY_ASSIGN(point.m_etc, open_in_root(root, "/etc", O_PATH | O_DIRECTORY, FollowLast::yes));
    const std::string root_path = path_of_fd(root.fd());
    const std::string etc_path = path_of_fd(point.m_etc.get());
    const std::string prefix = root_path == "/" ? std::string() : root_path;
    if (root_path.empty() || !(etc_path == root_path || etc_path.starts_with(prefix + "/"))) {
      point.m_etc.reset();
      return fail("resolve /etc in container root " + root.path() + ": not below the root");
    }
    point.m_dir = etc_path == root_path ? std::string() : etc_path.substr(prefix.size());
    point.m_name = temporary_name("ldconfig");
    if (::mkdirat(point.m_etc.get(), point.m_name.c_str(), 0700) != 0) {
      const int err = errno;
      point.m_etc.reset();
      return fail_errno("create " + point.path() + " in container root " + root.path(), err);
    }
    return point;
  }
  ScratchMountPoint(ScratchMountPoint&&) = default;
  ScratchMountPoint& operator=(ScratchMountPoint&&) = delete;
  ScratchMountPoint(const ScratchMountPoint&) = delete;
  ScratchMountPoint& operator=(const ScratchMountPoint&) = delete;
  ~ScratchMountPoint() {
    if (m_etc) {
      ::unlinkat(m_etc.get(), m_name.c_str(), AT_REMOVEDIR);
    }
  }
  [[nodiscard]] std::string path() const { return m_dir + "/" + m_name; }

 private:
  ScratchMountPoint() = default;
  UniqueFd m_etc;
  std::string m_dir;  // /etc's path in the root ("/etc"; "" for the root itself)
  std::string m_name;
};

// Runs `ldconfig` in the sandbox on `conf` (the text of this run's configuration) with the root
// read-only: it writes its cache into its scratch tmpfs, and no SONAME link (-X: the create-symlinks
// hook makes the driver's; the image's own are the image's) nor its auxiliary cache (-i: not read from
// the image either). Returns that cache, bounded and checked to be one.
// Whether ldconfig reading `root` as nobody (rootfs/sandbox.hpp: where the root cannot be idmapped) reaches
// `path`: every folder on the way searchable by others, and `path` itself readable by others (and
// searchable, for a folder). Links are followed inside the root, as ldconfig follows them. A path that
// does not resolve, or a spent budget, counts as reached: ldconfig skips that for reasons of its own.
bool nobody_reaches(const Root& root, const std::string& path, ImageBudget& budget) {
  std::vector<std::string> steps{"/"};
  for (const auto part : split(path, '/')) {
    if (!part.empty()) {
      steps.push_back((steps.size() == 1 ? "" : steps.back()) + "/" + std::string(part));
    }
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto fd = open_image_path(root, steps[i], O_PATH, budget);
    struct stat st {};
    if (!fd || ::fstat(fd->get(), &st) != 0) {
      return true;
    }
    const bool last = i + 1 == steps.size();
    const mode_t need = !last ? S_IXOTH : S_ISDIR(st.st_mode) ? (S_IROTH | S_IXOTH) : S_IROTH;
    if ((st.st_mode & need) != need) {
      return false;
    }
  }
  return true;
}

// The paths of `lists` that ldconfig reading the root as nobody cannot read, each once, as a line for a
// log ("" if none): "\"/etc/ld.so.conf.d/x.conf\", \"/opt/app/lib\"", at most 8 named, then how many more.
std::string hidden_from_nobody(const Root& root, std::initializer_list<const std::vector<std::string>*> lists,
                               ImageBudget& budget) {
  constexpr size_t k_named = 8;
  std::set<std::string> seen;
  std::string line;
  size_t hidden = 0;
  for (const auto* list : lists) {
    for (const auto& path : *list) {
      if (!seen.insert(path).second || nobody_reaches(root, path, budget)) {
        continue;
      }
      if (++hidden <= k_named) {
        line += (line.empty() ? "" : ", ") + quote(path);
      }
    }
  }
  if (hidden > k_named) {
    line += " and " + std::to_string(hidden - k_named) + " more";
  }
  return line;
}

Result<std::string> run_ldconfig(const Root& root, const UniqueFd& ldconfig, std::string_view conf,
                                 const SandboxLimits& limits) {
  GPUCTK_TRY_ASSIGN(const auto point, ScratchMountPoint::make(root));
  const std::string dir = point.path();
  GPUCTK_TRY_ASSIGN(const auto scratch, Scratch::make(dir));
  GPUCTK_TRY(scratch.put("ld.so.conf", conf));
  GPUCTK_TRY(run_sandboxed(root, ldconfig,
                           {"ldconfig", "-X", "-i", "-f", dir + "/ld.so.conf", "-C", dir + "/ld.so.cache"},
                           limits, &scratch));
  auto cache = scratch.take("ld.so.cache", k_max_ld_cache_size);
  if (!cache) {
    return fail_with("ldconfig wrote no linker cache", cache.error());
  }
  if (std::ranges::none_of(k_ld_cache_magics, [&](std::string_view m) { return cache->starts_with(m); })) {
    return fail("ldconfig wrote " + dir +
                "/ld.so.cache, which is not a glibc linker cache (it starts with "
                "neither \"glibc-ld.so.cache1.1\" nor \"ld.so-1.7.0\"); not installed");
  }
  return cache;
}

}  // namespace

Result<void> update_ld_cache(const Root& root, const std::vector<std::string>& folders,
                             const UniqueFd& ldconfig, const SandboxLimits& limits) {
  // The caller keeps its descriptor: the run gets a duplicate.
  const auto duplicate = [&]() -> Result<UniqueFd> {
    UniqueFd fd(::fcntl(ldconfig.get(), F_DUPFD_CLOEXEC, 0));
    if (!fd) {
      return fail_errno("duplicate the ldconfig descriptor", errno);
    }
    return fd;
  };
  return update_ld_cache_with(root, folders, {}, duplicate, limits);
}

Result<void> update_ld_cache_with(const Root& root, const std::vector<std::string>& folders,
                                  const LdCacheWriter& writer, const LdconfigOpener& open_ldconfig,
                                  const SandboxLimits& limits) {
  GPUCTK_TRY_ASSIGN(const auto unique, checked_folders(folders));
  if (!is_dir_in_root(root, "/etc")) {
    return fail(
        "the container has no /etc directory, so its linker cache cannot be updated (container root " +
        root.path() + ")");
  }
  std::vector<std::string> created;
  const bool had_conf_dir = is_dir_in_root(root, k_ld_conf_dir);
  const auto undo = [&](const Error& error) {
    for (const auto& path : created) {
      (void)remove_file(root, path);
    }
    if (!had_conf_dir) {
      if (auto etc = open_in_root(root, "/etc", O_PATH | O_DIRECTORY, FollowLast::yes)) {
        ::unlinkat(etc->get(), "ld.so.conf.d", AT_REMOVEDIR);  // only if empty
      }
    }
    return std::unexpected(error);
  };
  auto conf = open_in_root(root, k_ld_so_conf, O_PATH, FollowLast::yes);
  if (!conf) {
    if (auto r = write_file(root, k_ld_so_conf, k_ld_so_conf_text, 0644); !r) {
      return undo(r.error());
    }
    created.emplace_back(k_ld_so_conf);
  }
  // What the image's loader searches already: its configuration (as ldconfig reads it now, without
  // gpuctk's own drop-ins, which a restarted container still has) and its system directories.
  std::vector<FileId> ours;
  for (const char* path : {k_ld_conf_dropin, k_ld_conf_system_dropin}) {
    if (auto id = file_id(root, path)) {
      ours.push_back(*id);
    }
  }
  ImageBudget budget(limits.deadline);
  std::vector<std::string> conf_files;
  auto known = configured_library_dirs(root, k_ld_so_conf, ours, budget, &conf_files);
  if (!known) {
    return undo(known.error());
  }
  const auto system = image_system_dirs(root);
  std::vector<std::string> searched = *known;
  searched.insert(searched.end(), system.begin(), system.end());
  auto found = new_folders(root, unique, searched, budget);
  if (!found) {
    return undo(found.error());
  }
  const auto& added = *found;
  std::string text;
  for (const auto& folder : added) {
    text.append(folder).append("\n");
  }
  if (auto r = added.empty() ? remove_file(root, k_ld_conf_dropin)
                             : write_file(root, k_ld_conf_dropin, text, 0644);
      !r) {
    return undo(r.error());
  }
  if (!added.empty()) {
    created.emplace_back(k_ld_conf_dropin);
  }
  if (auto r = remove_file(root, k_ld_conf_system_dropin); !r) {
    return undo(r.error());
  }
  if (writer) {
    // The configuration again, now with the drop-in: where its folders come decides ties.
    auto order = configured_library_dirs(root, k_ld_so_conf, std::vector<FileId>{}, budget);
    if (!order) {
      return undo(order.error());
    }
    order->insert(order->end(), added.begin(), added.end());
    order->insert(order->end(), system.begin(), system.end());
    auto written = writer(
        root, LdScan{.configured = *known, .added = added, .system = system, .order = std::move(*order)},
        budget);
    if (!written) {
      return undo(written.error());
    }
    if (*written) {
      return {};
    }
  }
  auto ldconfig = open_ldconfig();
  if (!ldconfig) {
    return undo(ldconfig.error());
  }
  // The configuration this run reads: the image's, then the new folders again (they are found there
  // only if the image's ld.so.conf includes ld.so.conf.d; a second mention changes nothing), then the
  // system directories, last as the image's own ldconfig adds them.
  std::string run_text = std::string("include ") + k_ld_so_conf + "\n" + text;
  for (const auto& dir : system) {
    run_text.append(dir).append("\n");
  }
  // Where the root is read as nobody, the note names what ldconfig then skips (the files and folders only
  // their owner can read), so that a library missing from the cache has its reason in the log.
  SandboxLimits run_limits = limits;
  if (limits.note) {
    run_limits.note = [&](SandboxView view, const std::string& line) {
      const std::string hidden = view == SandboxView::nobody
                                     ? hidden_from_nobody(root, {&conf_files, &searched, &added}, budget)
                                     : "";
      if (hidden.empty()) {
        limits.note(view, line);
      } else {
        limits.note(SandboxView::nobody_skipping, line + ": " + hidden);
      }
    };
  }
  auto cache = run_ldconfig(root, *ldconfig, run_text, run_limits);
  if (!cache) {
    return undo(cache.error());
  }
  if (auto r = write_file(root, k_ld_cache, *cache, 0644); !r) {
    return undo(r.error());
  }
  return {};
}

Result<bool> update_musl_path(const Root& root, const std::vector<std::string>& folders,
                              std::chrono::milliseconds deadline) {
  GPUCTK_TRY_ASSIGN(const auto unique, checked_folders(folders));
  if (!is_dir_in_root(root, "/etc")) {
    return fail(
        "the container has no /etc directory, so its musl path file cannot be updated (container root " +
        root.path() + ")");
  }
  ImageBudget budget(deadline);
  GPUCTK_TRY_ASSIGN(const auto file, read_image_file(root, k_musl_path_file, k_max_conf_size, budget));
  if (file.kind == FileKind::directory) {
    return fail(std::string(k_musl_path_file) + " in container root " + root.path() + ": is a directory");
  }
  const std::string_view listed =
      file.kind == FileKind::regular ? std::string_view(file.text) : k_musl_default_path;
  std::vector<std::string> known;
  for (const auto dir : parse_musl_path(listed)) {
    known.emplace_back(dir);
  }
  std::vector<std::string> added;
  GPUCTK_TRY_ASSIGN(auto fresh, new_folders(root, unique, known, budget));
  for (auto& folder : fresh) {
    if (!holds_only_foreign_libraries(root, folder)) {
      added.push_back(std::move(folder));
    }
  }
  if (added.empty()) {
    return false;
  }
  std::string text;
  for (const auto& folder : added) {
    text.append(folder).append("\n");
  }
  if (file.kind == FileKind::regular) {
    text += file.text;  // the image's own list, byte for byte
  } else {
    for (const auto& dir : known) {
      text.append(dir).append("\n");
    }
  }
  GPUCTK_TRY(write_file(root, k_musl_path_file, text, 0644));
  return true;
}

ImageLibc image_libc(const Root& root) {
  const auto has = [&](const char* loader) {
    return open_in_root(root, loader, O_PATH, FollowLast::yes).has_value();
  };
  const bool glibc = has(k_glibc_loader);
  const bool musl = has(k_musl_loader);
  if (glibc && musl) {
    return ImageLibc::glibc_and_musl;
  }
  return glibc ? ImageLibc::glibc : musl ? ImageLibc::musl : ImageLibc::neither;
}

Result<void> update_library_search(const Root& root, const std::vector<std::string>& folders,
                                   const LdconfigOpener& open_ldconfig, const SandboxLimits& limits,
                                   const LdCacheWriter& writer) {
  const ImageLibc libc = image_libc(root);
  if (libc != ImageLibc::musl) {
    // Opened first, as before the merge existed: a wrong --ldconfig-path is the error whatever the image.
    GPUCTK_TRY_ASSIGN(auto ldconfig, open_ldconfig());
    GPUCTK_TRY(update_ld_cache_with(
        root, folders, writer, [&]() -> Result<UniqueFd> { return std::move(ldconfig); }, limits));
  }
  if (libc == ImageLibc::musl || libc == ImageLibc::glibc_and_musl) {
    GPUCTK_TRY(update_musl_path(root, folders, limits.deadline));
  }
  return {};
}

}  // namespace gpuctk::ldcache
