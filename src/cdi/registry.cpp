#include "cdi/registry.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <system_error>

#include "cdi/codec.hpp"
#include "cdi/doc_tree.hpp"
#include "cdi/validate.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

namespace fs = std::filesystem;

bool is_spec_file_name(std::string_view name) {
  return name.ends_with(".json") || name.ends_with(".yaml");
}

// The spec files of `dir`, sorted by name; an empty list when the directory does not exist.
Result<std::vector<std::string>> list_spec_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) {
    return files;
  }
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (is_spec_file_name(name) && it->is_regular_file(type_ec)) {
      files.push_back(dir == "/" ? "/" + name : dir + "/" + name);
    }
  }
  if (ec) {
    return fail(dir + ": " + ec.message());
  }
  std::ranges::sort(files);
  return files;
}

// A file's device defined in the directory being scanned.
struct Candidate {
  std::string file;
  std::shared_ptr<const Spec> spec;
  size_t index;
};

}  // namespace

// The file's bytes, bounded: a spec directory can hold anything, and one huge file must not cost the hook
// its memory. The size is checked before a byte is read; read_fd still bounds a file that grows.
static Result<std::string> read_spec_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    return fail_errno("read " + path, errno);
  }
  if (S_ISREG(st.st_mode)) {
    GPUCTK_TRY(check_spec_size(static_cast<uint64_t>(st.st_size)));
  }
  return read_fd(fd.get(), path, k_max_spec_bytes);
}

LoadedSpec load_spec_file(const std::string& path) {
  LoadedSpec loaded;
  const auto format = format_for_path(path);
  if (!format) {
    loaded.errors.push_back(format.error().message);
    return loaded;
  }
  auto text = read_spec_file(path);
  if (!text) {
    // read_file says "read <path>: <errno text>"; the caller names the file itself.
    std::string message = text.error().message;
    const std::string prefix = "read " + path + ": ";
    if (message.starts_with(prefix)) {
      message.erase(0, prefix.size());
    }
    loaded.errors.push_back(std::move(message));
    return loaded;
  }
  auto spec = parse_spec(*text, *format);
  if (!spec) {
    loaded.errors.push_back(spec.error().message);
    return loaded;
  }
  for (const Problem& problem : validate(*spec)) {
    loaded.errors.push_back(problem.where + ": " + problem.what);
  }
  if (loaded.errors.empty()) {
    loaded.spec = std::make_shared<const Spec>(std::move(*spec));
  }
  return loaded;
}

Registry scan_spec_dirs(std::span<const std::string> dirs) {
  Registry registry;
  for (const std::string& raw_dir : dirs) {
    const std::string dir = clean_path(raw_dir);
    const auto files = list_spec_files(dir);
    if (!files) {
      registry.errors.push_back(files.error().message);
      continue;
    }
    std::map<std::string, Candidate> here;  // this directory's devices
    std::set<std::string> conflicts;
    for (const std::string& file : *files) {
      LoadedSpec loaded = load_spec_file(file);
      for (const std::string& error : loaded.errors) {
        registry.errors.push_back(file + ": " + error);
      }
      if (!loaded.spec) {
        continue;
      }
      for (size_t i = 0; i < loaded.spec->devices.size(); ++i) {
        const std::string name = loaded.spec->kind + "=" + loaded.spec->devices[i].name;
        const auto [it, inserted] = here.try_emplace(name, Candidate{file, loaded.spec, i});
        if (!inserted) {
          registry.errors.push_back("conflicting device " + quote(name) + " (specs " +
                                    quote(it->second.file) + ", " + quote(file) + ")");
          conflicts.insert(name);
        }
      }
    }
    for (auto& [name, candidate] : here) {
      if (conflicts.contains(name)) {
        registry.devices.erase(name);  // not even a lower directory's definition stays
        continue;
      }
      const auto [vendor, klass] = split_kind(candidate.spec->kind);
      const Device& device = candidate.spec->devices[candidate.index];
      registry.devices.insert_or_assign(
          name, ResolvedDevice{QualifiedName{std::string(vendor), std::string(klass), device.name},
                               candidate.file, candidate.spec, candidate.index});
    }
  }
  return registry;
}

}  // namespace gpuctk::cdi
