// containerd's `imports`: the files it reads after its config file, and what they leave of gpuctk's runtime.
// Read from containerd's source and checked against its own `config dump` (Debian's 1.6.20, 1.7.24 and
// 2.1; tests/e2e/runtime_configure_containerd.sh):
//   - LoadConfig (services/server/config/config.go in 1.x, cmd/containerd/server/config/config.go in 2.x)
//     reads the file, then its imports breadth first: each import is cleaned and, when relative, joined to
//     the directory of the file that names it; one with a '*' is a glob (Go's filepath.Glob, sorted by
//     bytes), any other a path; a path already loaded is skipped. (1.6.20 matches a relative glob from its
//     working directory instead, "/" under systemd: NVIDIA's toolkit and gpuctk's tests import absolute
//     paths);
//   - 1.x merges each file with mergo over the ones before it, where a plugin's table (plugins.<ID>) of a
//     later file replaces the earlier one whole: an import that has the CRI plugin's table without
//     runtime "nvidia" drops it (1.6.20 and 1.7.24's dump);
//   - 2.x merges the plugins' tables key by key: only the keys an import sets change (2.1's dump).
//   - a missing import is an error for 1.x and ignored by 2.x.
// configure.hpp (read_sources) has gpuctk's bounds, and what it refuses.
#include "engine/containerd_imports.hpp"

#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>

#include "engine/engines.hpp"
#include "engine/toml_doc.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/path.hpp"

namespace gpuctk::engine::detail {

namespace {

// A file of the walk: its path as containerd keys it, and the file whose imports named it (-1: the config).
struct Node {
  std::string path;
  int parent;
};

struct Walk {
  std::vector<Node> nodes;
  std::string_view node_root;
  size_t bytes = 0;
  Sources sources;
  std::string_view assume;  // a file counted as there, not read (gpuctk's drop-in, made next)
  bool past_assumed = false;
  bool assumed_queued = false;
  bool keep_config = false;                  // the config's own text goes first into sources.before
  const std::string* config_text = nullptr;  // the config's text instead of the file's (nullptr: the file)
};

// The text of one file, or nullopt when it is missing. Followed when it is a link, as containerd's
// os.ReadFile follows it, but read only when a regular file within the bounds (never opened otherwise).
Result<std::optional<std::string>> read_import(const std::string& path, Walk& walk) {
  GPUCTK_TRY_ASSIGN(std::optional<std::string> read,
                    read_regular_at(AT_FDCWD, path.c_str(), path, k_max_config_file));
  if (!read) {
    return std::optional<std::string>{};
  }
  std::string& text = *read;
  walk.bytes += text.size();
  if (walk.bytes > k_max_config_file) {
    return fail("read " + path + ": containerd's configuration files together are larger than " +
                std::to_string(k_max_config_file) + " bytes");
  }
  return read;
}

// The paths a glob pattern matches, sorted by bytes as Go's filepath.Glob returns them.
Result<std::vector<std::string>> glob_paths(const std::string& pattern, const std::string& named_in) {
  glob_t found{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &found);
  std::vector<std::string> paths;
  if (rc == 0) {
    paths.assign(found.gl_pathv, found.gl_pathv + found.gl_pathc);
  }
  ::globfree(&found);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    return fail(named_in + ": imports " + quote(pattern) + ": the glob failed");
  }
  std::ranges::sort(paths);
  return paths;
}

// Whether `path` is the node `at` or one of the files that imported it, on the way to the config file.
bool on_the_way(const Walk& walk, int at, const std::string& path) {
  for (; at >= 0; at = walk.nodes[static_cast<size_t>(at)].parent) {
    if (walk.nodes[static_cast<size_t>(at)].path == path) {
      return true;
    }
  }
  return false;
}

// Queues the imports the file of node `at` names, as containerd resolves them.
Result<void> queue_imports(const std::vector<std::string>& imports, int at, Walk& walk,
                           std::deque<int>& pending) {
  const std::string named_in = walk.nodes[static_cast<size_t>(at)].path;  // a copy: nodes grow below
  for (const std::string& import : imports) {
    std::vector<std::string> paths;
    const std::string joined = import_path(import, named_in, walk.node_root);
    if (joined.find('*') != std::string::npos) {
      GPUCTK_TRY_ASSIGN(paths, glob_paths(joined, named_in));
      // Go's filepath.Match and fnmatch agree on '*' not matching '/'.
      if (!walk.assume.empty() && std::ranges::find(paths, walk.assume) == paths.end() &&
          ::fnmatch(joined.c_str(), std::string(walk.assume).c_str(), FNM_PATHNAME) == 0) {
        paths.emplace_back(walk.assume);
        std::ranges::sort(paths);
      }
    } else {
      paths.push_back(joined);
    }
    for (std::string& path : paths) {
      walk.assumed_queued = walk.assumed_queued || (!walk.assume.empty() && path == walk.assume);
      if (on_the_way(walk, at, path)) {
        return fail(named_in + ": imports " + path + ", which imports it (an import loop)");
      }
      if (walk.nodes.size() >= k_max_source_files) {
        return fail(named_in + ": imports more than " + std::to_string(k_max_source_files) + " files in all");
      }
      walk.nodes.push_back(Node{.path = std::move(path), .parent = at});
      pending.push_back(static_cast<int>(walk.nodes.size() - 1));
    }
  }
  return {};
}

bool loaded_before(const Walk& walk, int at) {
  const std::string& path = walk.nodes[static_cast<size_t>(at)].path;
  return std::ranges::any_of(walk.sources.after, [&](const SourceFile& file) { return file.path == path; }) ||
         path == walk.nodes.front().path;
}

}  // namespace

std::string import_path(std::string_view import, std::string_view named_in, std::string_view node_root) {
  if (import.starts_with('/')) {
    // Cleaned before the root goes in front: a ".." never climbs out of it.
    return node_root.empty() ? clean_path(import) : clean_path(std::string(node_root) + clean_path(import));
  }
  const std::string dir = parent_path(named_in);
  const std::string joined = dir == "." ? std::string(import) : dir + "/" + std::string(import);
  return joined.starts_with('/') ? clean_path(joined) : joined;
}

Result<std::vector<std::string>> containerd_imports(const toml::table& doc) {
  std::vector<std::string> imports;
  const toml::node* node = doc.get("imports");
  if (node == nullptr) {
    return imports;
  }
  const toml::array* list = node->as_array();
  if (list == nullptr) {
    return std::unexpected(wrong_type("imports", *node, "an array of strings"));
  }
  for (const toml::node& item : *list) {
    const auto value = item.value<std::string>();
    if (!value) {
      return std::unexpected(wrong_type("imports", item, "a string"));
    }
    imports.push_back(*value);
  }
  return imports;
}

namespace {

Result<void> walk_imports(const std::string& path, Walk& walk) {
  walk.nodes.push_back(Node{.path = path, .parent = -1});
  std::deque<int> pending{0};
  while (!pending.empty()) {
    const int at = pending.front();
    pending.pop_front();
    if (at != 0 && loaded_before(walk, at)) {
      continue;  // containerd loads a file once
    }
    const std::string file = walk.nodes[static_cast<size_t>(at)].path;
    if (!walk.assume.empty() && file == walk.assume) {
      walk.past_assumed = true;
      continue;
    }
    std::optional<std::string> text;
    if (at == 0 && walk.config_text != nullptr) {
      if (!walk.config_text->empty()) {
        text = *walk.config_text;
      }
    } else {
      GPUCTK_TRY_ASSIGN(text, read_import(file, walk));
    }
    if (!text) {
      continue;  // the config itself (configure makes it) or an import containerd 2.x skips
    }
    auto doc = parse_toml(*text);
    if (!doc) {
      return fail_with(file, doc.error());
    }
    auto imports = containerd_imports(*doc);
    if (!imports) {
      return fail_with(file, imports.error());
    }
    GPUCTK_TRY(queue_imports(*imports, at, walk, pending));
    if (at == 0 && !walk.assume.empty() && !walk.assumed_queued) {
      walk.nodes.push_back(Node{.path = std::string(walk.assume), .parent = 0});  // imported last
      pending.push_back(static_cast<int>(walk.nodes.size() - 1));
    }
    if (at != 0 || walk.keep_config) {
      (walk.past_assumed || walk.assume.empty() ? walk.sources.after : walk.sources.before)
          .push_back(SourceFile{.path = file, .text = std::move(*text)});
    }
  }
  return {};
}

}  // namespace

Result<Sources> containerd_sources(const std::string& path, std::string_view node_root) {
  Walk walk;
  walk.node_root = node_root;
  GPUCTK_TRY(walk_imports(path, walk));
  return std::move(walk.sources);
}

Result<DropInPlace> containerd_drop_in_place(const std::string& path, std::string_view node_root,
                                             const std::string& drop_in, const std::string* config_text) {
  Walk walk;
  walk.config_text = config_text;
  walk.node_root = node_root;
  walk.assume = drop_in;
  walk.keep_config = true;
  GPUCTK_TRY(walk_imports(path, walk));
  return DropInPlace{.sources = std::move(walk.sources), .needs_import = !walk.assumed_queued};
}

}  // namespace gpuctk::engine::detail
