#include "ldcache/linker_config.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <map>
#include <set>

#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::ldcache {

using rootfs::FileId;
using rootfs::FileKind;
using rootfs::ImageBudget;
using rootfs::ImageWork;
using rootfs::open_image_path;
using rootfs::read_image_file;
using rootfs::Root;

namespace {

bool is_glob_pattern(std::string_view text) {
  return text.find_first_of("*?[\\") != std::string_view::npos;
}

std::string join_path(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') {
    out += '/';
  }
  return out.append(name);
}

std::string_view dirname_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) {
    return ".";
  }
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The names in the directory `dir` of the image that `pattern` matches, sorted; `scanned` counts the
// entries read against k_max_glob_entries, `budget` too. A directory that cannot be opened matches
// nothing (glob's GLOB_ABORTED, which ldconfig ignores).
Result<std::vector<std::string>> matching_names(const Root& root, const std::string& dir,
                                                const std::string& pattern, size_t& scanned,
                                                ImageBudget& budget) {
  std::vector<std::string> names;
  auto fd = open_image_path(root, dir, O_RDONLY | O_DIRECTORY, budget);
  if (!fd) {
    GPUCTK_TRY(budget.check());
    return names;
  }
  DIR* stream = ::fdopendir(fd->get());
  if (stream == nullptr) {
    return names;
  }
  fd->release();
  while (const dirent* entry = ::readdir(stream)) {
    if (!budget.spend(ImageWork::entries, 1)) {
      ::closedir(stream);
      return budget.exhausted();
    }
    if (++scanned > k_max_glob_entries) {
      ::closedir(stream);
      return fail("include patterns scan more than " + std::to_string(k_max_glob_entries) +
                  " directory entries (" + quote(join_path(dir, pattern)) + ")");
    }
    const std::string_view name = entry->d_name;
    if (name != "." && name != ".." && ::fnmatch(pattern.c_str(), entry->d_name, FNM_PERIOD) == 0) {
      names.emplace_back(name);
    }
  }
  ::closedir(stream);
  std::ranges::sort(names);
  return names;
}

// Reads an ld.so.conf and its includes, depth first, collecting the directories they name.
class ConfReader {
 public:
  ConfReader(const Root& root, std::span<const FileId> skip, ImageBudget& budget)
      : m_root(root), m_skip(skip.begin(), skip.end()), m_budget(budget) {}

  // Reads the file `path` and what it includes; returns how many files ldconfig opens for it, which
  // reads a file again each time it is included (a file included twice at each of 30 levels would keep
  // it busy for ever): more than k_max_conf_files is an error, and so is an include loop.
  Result<size_t> read(const std::string& path) {
    GPUCTK_TRY_ASSIGN(const auto file, read_image_file(m_root, path, k_max_conf_size, m_budget));
    if (file.kind != FileKind::regular || m_skip.contains(file.id)) {
      return 1;
    }
    if (m_reading.contains(file.id)) {
      return fail(quote(path) + " is included while it is read (an include loop)");
    }
    if (const auto done = m_opens.find(file.id); done != m_opens.end()) {
      return done->second;  // its directories are known already
    }
    m_reading.insert(file.id);
    m_files.push_back(path);
    size_t opens = 1;
    for (const auto& [kind, value] : parse_ld_so_conf(file.text)) {
      if (kind == LdSoConfKind::directory) {
        if (m_dirs.size() == k_max_conf_dirs) {
          return fail("more than " + std::to_string(k_max_conf_dirs) + " directories (at " + quote(path) +
                      ")");
        }
        m_dirs.push_back(value.front() == '/' ? value : "/" + value);
        continue;
      }
      const std::string& pattern = value;
      const std::string absolute = pattern.front() == '/' ? pattern : join_path(dirname_of(path), pattern);
      std::vector<std::string> matches;
      GPUCTK_TRY(expand("", split(absolute, '/'), 0, matches));
      for (const auto& match : matches) {
        GPUCTK_TRY_ASSIGN(const size_t more, read(match));
        opens += more;
        if (opens > k_max_conf_files) {
          return fail("more than " + std::to_string(k_max_conf_files) + " files (at " + quote(match) + ")");
        }
      }
    }
    m_reading.erase(file.id);
    m_opens.emplace(file.id, opens);
    return opens;
  }

  std::vector<std::string> take_dirs() { return std::move(m_dirs); }
  std::vector<std::string> take_files() { return std::move(m_files); }

 private:
  // The paths matching the components `parts` from index `at` on, below `prefix`, as glob(3) finds them.
  Result<void> expand(const std::string& prefix, const std::vector<std::string_view>& parts, size_t at,
                      std::vector<std::string>& out) {
    while (at < parts.size() && parts[at].empty()) {
      ++at;
    }
    if (at == parts.size()) {
      out.push_back(prefix.empty() ? "/" : prefix);
      return {};
    }
    const std::string part(parts[at]);
    if (!is_glob_pattern(part)) {
      return expand(prefix + "/" + part, parts, at + 1, out);
    }
    GPUCTK_TRY_ASSIGN(const auto names,
                      matching_names(m_root, prefix.empty() ? "/" : prefix, part, m_scanned, m_budget));
    for (const auto& name : names) {
      if (out.size() == k_max_conf_files) {
        return fail("more than " + std::to_string(k_max_conf_files) + " files (at " +
                    quote(prefix + "/" + part) + ")");
      }
      GPUCTK_TRY(expand(prefix + "/" + name, parts, at + 1, out));
    }
    return {};
  }

  const Root& m_root;
  std::set<FileId> m_skip;
  std::set<FileId> m_reading;        // the files being read: the include chain down to here
  std::map<FileId, size_t> m_opens;  // files read, with what ldconfig opens for each
  std::vector<std::string> m_dirs;
  std::vector<std::string> m_files;  // the regular files read, once each
  size_t m_scanned = 0;
  ImageBudget& m_budget;
};

}  // namespace

std::vector<LdSoConfEntry> parse_ld_so_conf(std::string_view text) {
  std::vector<LdSoConfEntry> out;
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  for (auto line : split(text, '\n')) {
    line = line.substr(0, line.find('#'));
    const size_t start = line.find_first_not_of(" \t\n\v\f\r");
    if (start == std::string_view::npos) {
      continue;
    }
    line.remove_prefix(start);
    if (line.size() > 7 && line.starts_with("include") && blank(line[7])) {
      std::string_view rest = line.substr(8);
      while (!rest.empty()) {
        const size_t end = std::min(rest.find_first_of(" \t"), rest.size());
        if (end > 0) {
          out.push_back({LdSoConfKind::include, std::string(rest.substr(0, end))});
        }
        rest.remove_prefix(std::min(end + 1, rest.size()));
      }
      continue;
    }
    if (line.size() > 5 && blank(line[5]) &&
        std::ranges::equal(line.substr(0, 5), std::string_view("hwcap"),
                           [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; })) {
      continue;
    }
    std::string_view dir = line.substr(0, line.find('='));
    while (!dir.empty() && std::isspace(static_cast<unsigned char>(dir.back()))) {
      dir.remove_suffix(1);
    }
    while (!dir.empty() && dir.back() == '/') {
      dir.remove_suffix(1);
    }
    if (!dir.empty()) {
      out.push_back({LdSoConfKind::directory, std::string(dir)});
    }
  }
  return out;
}

Result<std::vector<std::string>> configured_library_dirs(const Root& root, std::string_view conf,
                                                         std::span<const FileId> skip, ImageBudget& budget,
                                                         std::vector<std::string>* files) {
  ConfReader reader(root, skip, budget);
  if (auto r = reader.read(std::string(conf)); !r) {
    return fail_with("the image's linker configuration", r.error());
  }
  if (files != nullptr) {
    *files = reader.take_files();
  }
  return reader.take_dirs();
}

std::vector<std::string_view> parse_musl_path(std::string_view text) {
  text = text.substr(0, text.find('\0'));
  std::vector<std::string_view> dirs;
  while (!text.empty()) {
    const size_t end = std::min(text.find_first_of(":\n"), text.size());
    if (end > 0) {
      dirs.push_back(text.substr(0, end));
    }
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return dirs;
}

}  // namespace gpuctk::ldcache
