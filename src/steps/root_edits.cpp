#include "steps/root_edits.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>

#include "oci/bundle.hpp"
#include "oci/state.hpp"
#include "rootfs/file_mount.hpp"
#include "rootfs/sandbox.hpp"
#include "steps/cuda_compat.hpp"
#include "util/file.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::steps {

namespace {

// The largest compat library mapped to read its ELF note (a real libcuda is about 30 MiB).
constexpr off_t k_max_compat_library = 512 << 20;

// Names of the regular files in the directory `dir` (an fd opened for reading; consumed).
std::vector<std::string> regular_files(UniqueFd dir) {
  std::vector<std::string> names;
  DIR* stream = ::fdopendir(dir.get());
  if (stream == nullptr) {
    return names;
  }
  dir.release();
  while (const dirent* entry = ::readdir(stream)) {
    struct stat st {};
    if (::fstatat(::dirfd(stream), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
      names.emplace_back(entry->d_name);
    }
  }
  ::closedir(stream);
  return names;
}

// The note of the compat library `name` in the folder `dir_fd`, or why it could not be read. The name
// was a regular file when the folder was listed; what is there now (the image may have swapped in a
// device node or a FIFO) is opened only when it still is one.
Result<std::optional<CudaCompatNote>> read_compat_note(int dir_fd, const std::string& name) {
  GPUCTK_TRY_ASSIGN(const auto file, open_regular_at(dir_fd, name, "open"));
  struct stat st {};
  if (::fstat(file.get(), &st) != 0) {
    return fail_errno("open", errno);
  }
  if (st.st_size > k_max_compat_library) {
    return fail(std::to_string(st.st_size) + " bytes, more than the limit of " +
                std::to_string(k_max_compat_library) + " bytes");
  }
  if (st.st_size == 0) {
    return parse_cuda_compat_note({});  // mmap refuses an empty file; the parser says what it is
  }
  const ReadOnlyMapping mapping(file.get(), static_cast<size_t>(st.st_size));
  if (!mapping.ok()) {
    return fail_errno("map", errno);
  }
  return parse_cuda_compat_note(mapping.bytes());
}

}  // namespace

Result<std::string> container_root_from_state(std::string_view state_json) {
  auto state = oci::parse_state(state_json);
  if (!state) {
    return std::unexpected(state.error());
  }
  if (state->bundle.empty() || state->bundle.front() != '/') {
    return fail("OCI state: bundle " + quote(state->bundle) + " is not an absolute path");
  }
  if (!state->root.empty()) {
    return clean_absolute_path(state->root, state->bundle);
  }
  // The same read as the shim's: O_NOFOLLOW, a regular file, bounded, keys checked as runc reads them.
  GPUCTK_TRY_ASSIGN(const auto config, oci::read_config(state->bundle));
  return oci::rootfs_path(config, state->bundle);
}

Result<std::vector<Link>> split_links(const std::vector<std::string>& values) {
  if (values.size() > k_max_hook_args) {
    return fail("too many links: " + std::to_string(values.size()));
  }
  std::vector<Link> links;
  links.reserve(values.size());
  for (const auto& value : values) {
    GPUCTK_TRY_ASSIGN(auto link, cdi::split_link(value));
    links.push_back(std::move(link));
  }
  return links;
}

Result<std::vector<Link>> check_links(const std::vector<Link>& given) {
  if (given.size() > k_max_hook_args) {
    return fail("too many links: " + std::to_string(given.size()));
  }
  std::map<std::string, std::string> by_link;
  std::vector<Link> links;
  for (const auto& link : given) {
    if (auto parts = rootfs::split_container_path(link.link); !parts) {
      return fail_with("--link " + quote(cdi::link_arg(link)), parts.error());
    }
    const auto [it, inserted] = by_link.emplace(link.link, link.target);
    if (!inserted) {
      if (it->second != link.target) {
        return fail("--link: " + quote(link.link) + " is given two targets, " + quote(it->second) + " and " +
                    quote(link.target));
      }
      continue;
    }
    links.push_back(link);
  }
  return links;
}

Result<std::vector<Link>> parse_links(const std::vector<std::string>& values) {
  GPUCTK_TRY_ASSIGN(const auto links, split_links(values));
  return check_links(links);
}

Result<size_t> create_symlinks(const rootfs::Root& root, const std::vector<Link>& links) {
  std::vector<rootfs::LinkSpec> specs;
  specs.reserve(links.size());
  for (const auto& link : links) {
    specs.push_back({link.target, link.link});
  }
  return rootfs::create_symlinks(root, specs);
}

Result<UniqueFd> open_host_ldconfig(std::string_view ldconfig_path) {
  std::string host(ldconfig_path.starts_with('@') ? ldconfig_path.substr(1) : ldconfig_path);
  if (host.empty() || host.front() != '/') {
    return fail("--ldconfig-path " + quote(ldconfig_path) + ": expected an absolute host path");
  }
  if (const std::string real = host + ".real"; ::access(real.c_str(), X_OK) == 0) {
    host = real;
  }
  return rootfs::seal_host_program(host);
}

Result<bool> enable_cuda_compat(const rootfs::Root& root, const CudaCompatHost& host,
                                std::string_view compat_dir, const config::Log& log) {
  if (auto parts = rootfs::split_container_path(compat_dir); !parts) {
    return fail_with("--cuda-compat-container-root " + quote(compat_dir), parts.error());
  }
  if (host.driver_version.empty() && host.cuda_version.empty()) {
    return false;
  }
  auto dir = rootfs::open_in_root(root, compat_dir, O_RDONLY | O_DIRECTORY, rootfs::FollowLast::yes);
  if (!dir) {
    return false;  // no compat directory (or not one we may read safely): nothing to enable
  }
  UniqueFd listing(::fcntl(dir->get(), F_DUPFD_CLOEXEC, 0));
  if (!listing) {
    return fail_errno("dup", errno);
  }
  const auto libraries = compat_libraries(regular_files(std::move(listing)));
  if (libraries.size() != 1) {
    if (libraries.size() > 1 && log.enabled(config::LogLevel::warning)) {
      // A few names are enough to see the mistake; an image may hold any number.
      constexpr size_t k_named = 4;
      std::vector<std::string> named(libraries.begin(),
                                     libraries.begin() + std::min(libraries.size(), k_named));
      if (libraries.size() > k_named) {
        named.emplace_back("...");
      }
      log.warning("enable-cuda-compat: " + std::to_string(libraries.size()) + " compat libraries in " +
                  std::string(compat_dir) + " (" + join(named, ", ") + "): using none");
    }
    return false;
  }
  const std::string& name = libraries.front();
  auto note = read_compat_note(dir->get(), name);
  if (!note && log.enabled(config::LogLevel::warning)) {
    log.warning("enable-cuda-compat: ignoring the note of " + std::string(compat_dir) + "/" + name + ": " +
                note.error().message);
  }
  if (!use_cuda_compat(compat_library_version(name), note ? *note : std::nullopt, host)) {
    return false;
  }
  GPUCTK_TRY(rootfs::write_file(root, k_cuda_compat_dropin, std::string(compat_dir) + "\n", 0644));
  return true;
}

std::optional<std::string> params_without_device_modification(std::string_view params) {
  std::string out;
  bool changed = false;
  for (const auto line : split(params, '\n')) {
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && trim(line.substr(0, colon)) == "ModifyDeviceFiles" &&
        trim(line.substr(colon + 1)) != "0") {
      out.append("ModifyDeviceFiles: 0");
      changed = true;
    } else {
      out.append(line);
    }
    out += '\n';
  }
  if (!changed) {
    return std::nullopt;
  }
  out.pop_back();  // split() gives one more piece than there are newlines
  return out;
}

Result<std::optional<std::string>> read_hidden_params(const std::string& host_params) {
  auto text = read_file_nofollow(host_params, 1 << 20);
  if (!text) {
    if (::access(host_params.c_str(), F_OK) != 0 && errno == ENOENT) {
      return std::nullopt;  // no driver loaded: nothing can create nodes
    }
    return std::unexpected(text.error());
  }
  return params_without_device_modification(*text);
}

Result<bool> mount_hidden_params(const rootfs::Root& root, const std::string& params) {
  constexpr const char* k_params = "/proc/driver/nvidia/params";
  if (!rootfs::open_in_root(root, k_params, O_PATH, rootfs::FollowLast::no)) {
    return false;  // the container sees no params file (its /proc has no driver directory)
  }
  GPUCTK_TRY(rootfs::mount_readonly_file(root, k_params, params));
  return true;
}

Result<bool> disable_device_node_modification(const rootfs::Root& root, const std::string& host_params) {
  GPUCTK_TRY_ASSIGN(const auto params, read_hidden_params(host_params));
  if (!params) {
    return false;
  }
  return mount_hidden_params(root, *params);
}

std::string application_profile_text(uint64_t mask) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(mask));
  return std::string(R"({"profiles":[{"name":"_container_","settings":["EGLVisibleDGPUDevices",)") + hex +
         R"(]}],"rules":[{"pattern":[],"profile":"_container_"}]})";
}

namespace {

// "nvidia" and one or more digits: a GPU's node (not nvidiactl, nvidia-uvm, nvidia-caps, ...).
bool is_gpu_node_name(std::string_view name) {
  constexpr std::string_view prefix = "nvidia";
  return name.size() > prefix.size() && name.starts_with(prefix) &&
         std::ranges::all_of(name.substr(prefix.size()), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

Result<std::optional<uint64_t>> update_application_profile(const rootfs::Root& root, const config::Log& log) {
  auto dev = rootfs::open_in_root(root, "/dev", O_RDONLY | O_DIRECTORY, rootfs::FollowLast::yes);
  if (!dev) {
    return std::optional<uint64_t>{};  // no /dev: no GPU node, nothing to say
  }
  DIR* stream = ::fdopendir(dev->get());
  if (stream == nullptr) {
    return fail_errno("read /dev in container root " + root.path(), errno);
  }
  dev->release();
  uint64_t mask = 0;
  size_t seen = 0;
  Result<void> outcome;
  while (const dirent* entry = ::readdir(stream)) {
    if (++seen > k_max_dev_entries) {
      outcome = fail("/dev in container root " + root.path() + ": more than " +
                     std::to_string(k_max_dev_entries) + " entries");
      break;
    }
    if (!is_gpu_node_name(entry->d_name)) {
      continue;
    }
    struct stat st {};
    if (::fstatat(::dirfd(stream), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISCHR(st.st_mode)) {
      continue;  // gone meanwhile, or a link or file named like one: not a GPU the runtime gave
    }
    const unsigned minor = ::minor(st.st_rdev);
    if (minor >= 64) {
      log.warning("update-application-profile: " + quote("/dev/" + std::string(entry->d_name)) +
                  " has minor " + std::to_string(minor) +
                  ", outside 0-63: left out of EGLVisibleDGPUDevices");
      continue;
    }
    mask |= uint64_t{1} << minor;
  }
  ::closedir(stream);
  GPUCTK_TRY(outcome);
  if (mask == 0) {
    return std::optional<uint64_t>{};
  }
  const std::string_view path = k_application_profile;
  GPUCTK_TRY(rootfs::make_dirs(root, path.substr(0, path.rfind('/')), 0555));
  GPUCTK_TRY(rootfs::write_file(root, path, application_profile_text(mask), 0444));
  return std::optional<uint64_t>{mask};
}

Result<size_t> chmod_paths(const rootfs::Root& root, unsigned mode, const std::vector<std::string>& paths) {
  if (mode > 07777) {
    return fail("--mode " + std::to_string(mode) + ": not a file mode");
  }
  size_t changed = 0;
  for (const auto& path : paths) {
    auto fd = rootfs::open_in_root(root, path, O_PATH, rootfs::FollowLast::no);
    if (!fd) {
      return std::unexpected(fd.error());
    }
    struct stat st {};
    if (::fstat(fd->get(), &st) != 0) {
      return fail_errno("chmod " + path, errno);
    }
    if (S_ISLNK(st.st_mode)) {
      return fail("chmod " + path + " in container root " + root.path() + ": is a symlink");
    }
    if ((st.st_mode & 07777) == mode) {
      continue;
    }
    const std::string self = "/proc/self/fd/" + std::to_string(fd->get());
    if (::chmod(self.c_str(), static_cast<mode_t>(mode)) != 0) {
      if (errno == EPERM) {
        continue;
      }
      return fail_errno("chmod " + path + " in container root " + root.path(), errno);
    }
    ++changed;
  }
  return changed;
}

}  // namespace gpuctk::steps
