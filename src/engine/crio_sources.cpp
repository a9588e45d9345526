// Reading CRI-O's configuration files for the handler gpuctk writes (crio.cpp): the main file and the
// drop-in directory of the written file, in the order CRI-O reads them. configure.hpp (read_sources) has
// the rules and the bounds. These are root's files in /etc, but a loop, a FIFO or a huge file there must
// still end in one error, not a hang or an exhausted memory.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "engine/engines.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"

namespace gpuctk::engine::detail {

namespace {

// Where the written file sits in CRI-O's configuration.
struct Layout {
  std::string main;      // the --config file ("" when it is the written file itself)
  std::string dropins;   // the --config-dir
  std::string own_name;  // the written file's name in `dropins` ("" when it is not there)
};

Layout layout_of(const std::string& path) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (dir.size() > 2 && dir.ends_with(".d")) {
    // A drop-in: /etc/crio/crio.conf.d/99-gpuctk.conf belongs to /etc/crio/crio.conf.
    return Layout{.main = dir.substr(0, dir.size() - 2), .dropins = dir, .own_name = name};
  }
  // The main file itself: /etc/crio/crio.conf, with /etc/crio/crio.conf.d.
  return Layout{.main = "", .dropins = path + ".d", .own_name = ""};
}

struct Walk {
  std::string_view own_name;
  bool past_own = false;  // the walk is past the written file's place: what follows is read after it
  size_t files = 0;
  size_t bytes = 0;
  Sources sources;
};

enum class Missing : uint8_t { error, skip };

// One file, followed like CRI-O's os.ReadFile follows links, but read only when it is a regular file
// within the bounds (a FIFO, which would hang CRI-O and gpuctk alike, or a device node is never opened).
Result<void> read_source(int dir_fd, const char* name, const std::string& path, Missing missing, Walk& walk) {
  if (++walk.files > k_max_source_files) {
    return fail("read " + path + ": more than " + std::to_string(k_max_source_files) +
                " files in CRI-O's configuration");
  }
  GPUCTK_TRY_ASSIGN(std::optional<std::string> read, read_regular_at(dir_fd, name, path, k_max_config_file));
  if (!read) {
    return missing == Missing::skip ? Result<void>{} : fail_errno("read " + path, ENOENT);
  }
  std::string& text = *read;
  walk.bytes += text.size();
  if (walk.bytes > k_max_config_file) {
    return fail("read " + path + ": CRI-O's configuration files together are larger than " +
                std::to_string(k_max_config_file) + " bytes");
  }
  (walk.past_own ? walk.sources.after : walk.sources.before)
      .push_back(SourceFile{.path = path, .text = std::move(text)});
  return {};
}

// The names in the directory `dir_fd`, sorted as Go's filepath.Walk sorts them: by bytes.
Result<std::vector<std::string>> sorted_names(int dir_fd, const std::string& path) {
  // fdopendir takes its fd, and the walk keeps `dir_fd` for the *at() calls: a copy is listed.
  UniqueFd fd(::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0));
  if (!fd) {
    return fail_errno("read " + path, errno);
  }
  DIR* dir = ::fdopendir(fd.get());
  if (dir == nullptr) {
    return fail_errno("read " + path, errno);
  }
  (void)fd.release();  // closedir closes it
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") {
      if (names.size() >= k_max_source_files) {
        ::closedir(dir);
        return fail("read " + path + ": more than " + std::to_string(k_max_source_files) + " entries");
      }
      names.emplace_back(name);
    }
  }
  const int err = errno;
  ::closedir(dir);
  if (err != 0) {
    return fail_errno("read " + path, err);
  }
  std::ranges::sort(names);
  return names;
}

Result<void> walk_dir(const UniqueFd& fd, const std::string& path, int depth, Walk& walk) {
  const int dir_fd = fd.get();
  GPUCTK_TRY_ASSIGN(const std::vector<std::string> names, sorted_names(dir_fd, path));
  for (const std::string& name : names) {
    const bool own_level = depth == 0 && !walk.own_name.empty();
    if (own_level && name == walk.own_name) {
      walk.past_own = true;  // gpuctk's drop-in does not feed itself
      continue;
    }
    if (own_level && name > walk.own_name) {
      walk.past_own = true;
    }
    const std::string child = path + "/" + name;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return fail_errno("read " + child, errno);
    }
    if (!S_ISDIR(st.st_mode)) {
      GPUCTK_TRY(read_source(dir_fd, name.c_str(), child, Missing::error, walk));
      continue;
    }
    if (depth + 1 > k_max_source_depth) {
      return fail("read " + child + ": directories nested deeper than " + std::to_string(k_max_source_depth) +
                  " levels");
    }
    const UniqueFd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) {
      return fail_errno("read " + child, errno);
    }
    GPUCTK_TRY(walk_dir(sub, child, depth + 1, walk));
  }
  return {};
}

}  // namespace

Result<Sources> crio_sources(const std::string& path) {
  const Layout layout = layout_of(path);
  // The written file is a drop-in, read after the main file, or the main file, read before every drop-in.
  Walk walk{.own_name = layout.own_name,
            .past_own = layout.own_name.empty(),
            .files = 0,
            .bytes = 0,
            .sources = {}};
  if (!layout.main.empty()) {
    // A missing --config file is skipped, as CRI-O skips its default one.
    GPUCTK_TRY(read_source(AT_FDCWD, layout.main.c_str(), layout.main, Missing::skip, walk));
  }
  // Followed when it is a link, as CRI-O's os.Stat does; a loop is ELOOP, named.
  const UniqueFd dir(::open(layout.dropins.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) {
    GPUCTK_TRY(walk_dir(dir, layout.dropins, 0, walk));
  } else if (errno != ENOENT) {
    return fail_errno("read " + layout.dropins, errno);
  }
  GPUCTK_TRY(check_crio_sources(walk.sources));
  return std::move(walk.sources);
}

}  // namespace gpuctk::engine::detail
