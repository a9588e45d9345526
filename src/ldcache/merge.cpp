#include "ldcache/merge.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "ldcache/cache_file.hpp"
#include "ldcache/linker_config.hpp"
#include "ldcache/paths.hpp"
#include "rootfs/in_root.hpp"
#include "rootfs/sandbox.hpp"
#include "util/strings.hpp"

namespace gpuctk::ldcache {

namespace {

// The include lines of the images we merge for (Debian's absolute one, RHEL's relative one); anything
// else may read files whose dates are not checked here.
constexpr std::string_view k_known_includes[] = {"/etc/ld.so.conf.d/*.conf", "ld.so.conf.d/*.conf"};
// Entries of one directory looked at; a larger one is left to ldconfig.
constexpr size_t k_max_scan_entries = 65536;

using rootfs::FileId;

bool newer(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

FileId id_of(const struct stat& st) {
  return FileId{st.st_dev, st.st_ino};
}

// The directory of the container path `path` ("/a/b" -> "/a"; "/a" -> "/").
std::string dir_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? std::string("/") : std::string(path.substr(0, slash));
}
std::string name_of(std::string_view path) {
  return std::string(path.substr(path.rfind('/') + 1));
}

// A name ldconfig takes a library from: "lib*" or "ld-*" (the loader) with ".so" in it; it ignores every
// other name (nvidia-drm_gbm.so, a regular xyz.so.1: checked against glibc 2.36's ldconfig).
bool library_name(std::string_view name) {
  return (name.starts_with("lib") || name.starts_with("ld-")) && name.find(".so") != std::string_view::npos;
}

// Stops the merge with `why`.
struct NotProven {
  std::string reason;
};

// What the merge reads of the image; each member function returns the reason the merge cannot be
// proven, or nothing.
class Merge {
 public:
  Merge(const rootfs::Root& root, const LdScan& scan, const std::vector<LdCacheFact>& facts,
        rootfs::ImageBudget& budget)
      : m_root(root), m_scan(scan), m_facts(facts), m_budget(budget) {}

  Result<MergeOutcome> run() {
    MergeOutcome out;
    auto why = prove();
    if (auto spent = m_budget.check(); !spent) {
      // Whatever was decided, some read failed for the budget, not for the image: nothing is proven.
      out.reason = spent.error().message;
      return out;
    }
    if (!why) {
      return std::unexpected(why.error());
    }
    if (*why) {
      out.reason = std::move(**why);
      return out;
    }
    GPUCTK_TRY_ASSIGN(const auto bytes, serialize_ld_cache(m_cache));
    if (bytes.size() > rootfs::k_scratch_size) {
      out.reason =
          "the merged cache would be larger than " + std::to_string(rootfs::k_scratch_size) + " bytes";
      return out;
    }
    GPUCTK_TRY(rootfs::write_file(m_root, k_ld_cache, bytes, 0644));
    out.merged = true;
    out.added = m_added;
    return out;
  }

 private:
  using Why = std::optional<std::string>;

  Result<Why> prove() {
    if (m_facts.empty()) {
      return Why("no --ld-cache-entry (the spec does not carry the driver's cache entries)");
    }
    if (rootfs::open_in_root(m_root, k_cuda_compat_dropin, O_PATH, rootfs::FollowLast::no)) {
      return Why(std::string(k_cuda_compat_dropin) + " exists: the CUDA compat libraries are the image's");
    }
    if (auto why = read_cache()) {
      return why;
    }
    if (auto why = check_configuration()) {
      return why;
    }
    GPUCTK_TRY_ASSIGN(auto why, check_directories());
    if (why) {
      return why;
    }
    return add_facts();
  }

  // The image's cache, its date, bounded and parsed.
  Why read_cache() {
    auto fd = rootfs::open_in_root(m_root, k_ld_cache, O_PATH, rootfs::FollowLast::no);
    struct stat st {};
    if (!fd) {
      return std::string(k_ld_cache) + ": " + fd.error().message;
    }
    if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return std::string(k_ld_cache) + " is not a regular file";
    }
    if (static_cast<uint64_t>(st.st_size) > rootfs::k_scratch_size) {
      return std::string(k_ld_cache) + " is larger than " + std::to_string(rootfs::k_scratch_size) + " bytes";
    }
    m_cache_time = st.st_mtim;
    auto file = rootfs::read_image_file(m_root, k_ld_cache, rootfs::k_scratch_size, m_budget);
    if (!file) {
      return file.error().message;
    }
    if (file->kind != rootfs::FileKind::regular || file->id != id_of(st)) {
      return std::string(k_ld_cache) + " changed while it was read";
    }
    auto cache = parse_ld_cache(file->text);
    if (!cache) {
      return cache.error().message;
    }
    if (cache->format != LdCacheFormat::new_only) {
      return std::string(k_ld_cache) + " is not in the new format alone (an old or compat cache)";
    }
    for (const auto& entry : cache->entries) {
      if ((entry.hwcap & k_hwcap_extension) != 0 &&
          (entry.hwcap & 0xffffffffu) >= cache->extensions.hwcaps_subdirs.size()) {
        return std::string(k_ld_cache) + ": entry " + quote(entry.key) +
               " has a glibc-hwcaps index outside its list";
      }
    }
    m_cache = std::move(*cache);
    return std::nullopt;
  }

  // The date of `path` (links followed inside the root), or why it cannot be used.
  Why check_file_date(std::string_view path, bool required) {
    auto file = rootfs::read_image_file(m_root, path, k_max_conf_size, m_budget);
    if (!file) {
      return file.error().message;
    }
    if (file->kind != rootfs::FileKind::regular) {
      return required ? Why(std::string(path) + " is not a regular file") : std::nullopt;
    }
    auto fd = rootfs::open_image_path(m_root, path, O_PATH, m_budget);
    struct stat st {};
    if (!fd || ::fstat(fd->get(), &st) != 0) {
      return std::string(path) + " cannot be examined";
    }
    if (newer(st.st_mtim, m_cache_time)) {
      return std::string(k_ld_cache) + " is older than " + std::string(path);
    }
    for (const auto& line : parse_ld_so_conf(file->text)) {
      if (line.kind == LdSoConfKind::include &&
          std::ranges::find(k_known_includes, line.value) == std::end(k_known_includes)) {
        return std::string(path) + " includes " + quote(line.value);
      }
    }
    return std::nullopt;
  }

  // /etc/ld.so.conf and the image's files in /etc/ld.so.conf.d: none newer than the cache.
  Why check_configuration() {
    if (auto why = check_file_date(k_ld_so_conf, true)) {
      return why;
    }
    auto dir = rootfs::open_image_path(m_root, k_ld_conf_dir, O_RDONLY | O_DIRECTORY, m_budget);
    if (!dir) {
      return std::nullopt;  // nothing is included from it
    }
    std::vector<std::string> names;
    if (auto why = list(std::move(*dir), names)) {
      return why;
    }
    for (const auto& name : names) {
      const std::string path = std::string(k_ld_conf_dir) + "/" + name;
      if (!name.ends_with(".conf") || name.starts_with('.') || path == k_ld_conf_dropin ||
          path == k_ld_conf_system_dropin) {
        continue;
      }
      if (auto why = check_file_date(path, false)) {
        return why;
      }
    }
    return std::nullopt;
  }

  // The names in the directory `fd` (bounded, each spent from the budget), which it takes.
  Why list(UniqueFd fd, std::vector<std::string>& names) {
    DIR* stream = ::fdopendir(fd.get());
    if (stream == nullptr) {
      return std::string("a directory cannot be listed");
    }
    fd.release();
    Why why;
    while (const dirent* entry = ::readdir(stream)) {
      if (!m_budget.spend(rootfs::ImageWork::entries, 1)) {
        why = m_budget.check().error().message;
        break;
      }
      if (names.size() >= k_max_scan_entries) {
        why = "a directory holds more than " + std::to_string(k_max_scan_entries) + " entries";
        break;
      }
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") {
        names.emplace_back(name);
      }
    }
    ::closedir(stream);
    return why;
  }

  // Every directory ldconfig scans, under its first name, with the facts' files.
  Result<Why> check_directories() {
    std::vector<std::pair<std::string, bool>> dirs;  // path, added
    const auto is_added = [&](const std::string& dir) {
      return std::ranges::find(m_scan.added, dir) != m_scan.added.end();
    };
    for (const auto& dir : m_scan.order) {
      dirs.emplace_back(dir, is_added(dir));
    }
    for (const auto* list : {&m_scan.configured, &m_scan.added, &m_scan.system}) {
      for (const auto& dir : *list) {
        dirs.emplace_back(dir, is_added(dir));  // met before through `order` when it is given
      }
    }
    // The facts' files (their paths followed inside the root) and folders, resolved once for every check
    // below (nothing in the root changes in between: the container does not run yet).
    for (const auto& fact : m_facts) {
      Resolved& resolved =
          m_resolved.emplace_back(Resolved{.fact = &fact, .dir = std::nullopt, .regular = false});
      resolved.dir = rootfs::directory_id(m_root, dir_of(fact.path), m_budget);
      auto fd = rootfs::open_image_path(m_root, fact.path, O_PATH, m_budget);
      struct stat st {};
      if (!fd || ::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        continue;  // nothing there: ldconfig finds nothing either
      }
      resolved.regular = true;
      // A SONAME link (its name is the SONAME): in its folder, ldconfig takes it over every other name
      // that leads to the same library (checked against glibc 2.36's ldconfig).
      if (name_of(fact.path) == fact.soname && resolved.dir) {
        m_soname_links.emplace(std::pair{*resolved.dir, id_of(st)}, fact.soname);
      }
    }
    // The image's entries by the directory their path names.
    std::map<std::string, std::vector<std::string>, std::less<>> cached;
    for (const auto& entry : m_cache.entries) {
      if (entry.value.starts_with('/')) {
        cached[dir_of(entry.value)].push_back(name_of(entry.value));
      }
    }
    std::set<std::string_view> resolved;  // a path met again leads where it led: nothing changes meanwhile
    for (const auto& [dir, added] : dirs) {
      if (!resolved.insert(dir).second) {
        continue;
      }
      auto fd = rootfs::open_image_path(m_root, dir, O_RDONLY | O_DIRECTORY, m_budget);
      struct stat st {};
      if (!fd || ::fstat(fd->get(), &st) != 0) {
        continue;  // no directory there: ldconfig skips it
      }
      if (!m_canonical.emplace(id_of(st), dir).second) {
        continue;  // met before under another name: ldconfig scans it once
      }
      m_rank.emplace(id_of(st), m_rank.size());
      if (auto why = check_hwcaps(*fd, dir)) {
        return why;
      }
      if (!added && !newer(st.st_mtim, m_cache_time)) {
        continue;
      }
      if (auto why = check_changed(std::move(*fd), st, dir, added, cached)) {
        return why;
      }
    }
    return Why();
  }

  // The glibc-hwcaps subdirectories of `dir`: none newer than the cache (driver libraries never go there).
  Why check_hwcaps(const UniqueFd& dir, const std::string& path) {
    UniqueFd hwcaps(::openat(dir.get(), "glibc-hwcaps", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!hwcaps) {
      return std::nullopt;
    }
    struct stat st {};
    if (::fstat(hwcaps.get(), &st) != 0 || newer(st.st_mtim, m_cache_time)) {
      return std::string(k_ld_cache) + " is older than " + path + "/glibc-hwcaps";
    }
    const int fd = hwcaps.get();
    std::vector<std::string> names;
    if (auto why = list(UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)), names)) {
      return why;
    }
    for (const auto& name : names) {
      struct stat sub {};
      if (::fstatat(fd, name.c_str(), &sub, AT_SYMLINK_NOFOLLOW) == 0 && newer(sub.st_mtim, m_cache_time)) {
        return std::string(k_ld_cache) + " is older than " + path + "/glibc-hwcaps/" + quote(name);
      }
    }
    return std::nullopt;
  }

  // A directory changed since the cache was written (or an added one): every library name in it is a
  // fact, a fact's file, or was there before (older, not mounted, not a link); every cached one exists.
  Why check_changed(UniqueFd fd, const struct stat& dir_st, const std::string& dir, bool added,
                    const std::map<std::string, std::vector<std::string>, std::less<>>& cached) {
    const int dirfd = fd.get();
    UniqueFd keep(::fcntl(dirfd, F_DUPFD_CLOEXEC, 0));
    std::vector<std::string> names;
    if (auto why = list(std::move(fd), names)) {
      return why;
    }
    std::set<std::string> fact_names;
    for (const auto& resolved : m_resolved) {
      if (resolved.dir && *resolved.dir == id_of(dir_st)) {
        fact_names.insert(name_of(resolved.fact->path));
      }
    }
    for (const auto& name : names) {
      if (!library_name(name) || fact_names.contains(name)) {
        continue;
      }
      struct stat st {};
      if (::fstatat(keep.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        return dir + "/" + quote(name) + " cannot be examined";
      }
      const bool is_new = added || st.st_dev != dir_st.st_dev || newer(st.st_mtim, m_cache_time);
      if (is_new && !hidden_by_soname_link(dir, name, st, id_of(dir_st))) {
        return dir + "/" + quote(name) + " is new since " + k_ld_cache + " and none of the driver's entries";
      }
    }
    if (const auto it = cached.find(dir); it != cached.end()) {
      for (const auto& name : it->second) {
        struct stat st {};
        if (::fstatat(keep.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
          return std::string(k_ld_cache) + " lists " + dir + "/" + quote(name) + ", which is gone";
        }
      }
    }
    return std::nullopt;
  }

  // Whether ldconfig takes nothing from `name` in the folder `dir` (identity `dir_id`; `entry`: the
  // name's own stat, not followed): it leads, inside the root, to a driver library whose SONAME link is
  // in that folder, and it is not a development link ("lib<x>.so" with the SONAME starting with it),
  // which ldconfig lists under its own name. Only a link is resolved: a regular file is where it leads.
  bool hidden_by_soname_link(const std::string& dir, const std::string& name, const struct stat& entry,
                             FileId dir_id) {
    struct stat st = entry;
    if (S_ISLNK(entry.st_mode)) {
      auto fd = rootfs::open_image_path(m_root, dir + "/" + name, O_PATH, m_budget);
      if (!fd || ::fstat(fd->get(), &st) != 0) {
        return false;
      }
    }
    if (!S_ISREG(st.st_mode)) {
      return false;
    }
    const auto it = m_soname_links.find(std::pair{dir_id, id_of(st)});
    return it != m_soname_links.end() && !(name.ends_with(".so") && it->second.starts_with(name));
  }

  // The facts' entries, where ldconfig would put them: in the order of their directories, so that two
  // of one SONAME (Debian's packages: nvidia/current and the multiarch folder's link to it) come as
  // ldconfig meets them.
  Result<Why> add_facts() {
    std::vector<std::pair<size_t, LdCacheEntry>> adding;
    for (const auto& [fact_ptr, dir, regular] : m_resolved) {
      if (!regular) {
        continue;
      }
      const LdCacheFact& fact = *fact_ptr;
      const auto canonical = dir ? m_canonical.find(*dir) : m_canonical.end();
      if (canonical == m_canonical.end()) {
        continue;  // not in a scanned directory
      }
      LdCacheEntry entry{.key = fact.soname,
                         .value = canonical->second + "/" + name_of(fact.path),
                         .flags = fact.flags,
                         .osversion = fact.osversion,
                         .hwcap = 0};
      bool present = false;
      for (const auto& e : m_cache.entries) {
        if (e.key != entry.key || e.flags != entry.flags) {
          continue;
        }
        if (e.value != entry.value || e.hwcap != 0) {
          return Why(quote(entry.key) + " is both " + e.value + " and " + entry.value +
                     ": which one the loader finds depends on the order of the folders");
        }
        present = true;
      }
      const size_t rank = m_rank.at(canonical->first);
      for (const auto& [other_rank, other] : adding) {
        if (other_rank == rank && other.key == entry.key && other.flags == entry.flags &&
            other.value != entry.value) {
          return Why(quote(entry.key) + " is both " + other.value + " and " + entry.value +
                     " in one folder: ldconfig keeps one of them");
        }
        present = present || other == entry;
      }
      if (!present) {
        adding.emplace_back(rank, std::move(entry));
      }
    }
    std::ranges::stable_sort(adding, {}, &std::pair<size_t, LdCacheEntry>::first);
    for (auto& [rank, entry] : adding) {
      insert_ld_cache_entry(m_cache, std::move(entry));
      ++m_added;
    }
    return Why();
  }

  const rootfs::Root& m_root;
  const LdScan& m_scan;
  const std::vector<LdCacheFact>& m_facts;
  rootfs::ImageBudget& m_budget;
  LdCache m_cache;
  struct timespec m_cache_time {};
  std::map<FileId, std::string> m_canonical;  // a scanned directory's first name
  std::map<FileId, size_t> m_rank;            // the order ldconfig scans the directories in
  std::map<std::pair<FileId, FileId>, std::string> m_soname_links;  // (folder, library) -> SONAME
  struct Resolved {
    const LdCacheFact* fact = nullptr;
    std::optional<FileId> dir;  // its folder, when that resolves inside the root
    bool regular = false;       // its path leads to a regular file
  };
  std::vector<Resolved> m_resolved;  // each fact, in order
  size_t m_added = 0;
};

}  // namespace

Result<MergeOutcome> merge_ld_cache(const rootfs::Root& root, const LdScan& scan,
                                    const std::vector<LdCacheFact>& facts, rootfs::ImageBudget& budget) {
  return Merge(root, scan, facts, budget).run();
}

}  // namespace gpuctk::ldcache
