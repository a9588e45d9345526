#include "cgroup/device_access.hpp"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/mountinfo.hpp"
#include "util/strings.hpp"

namespace gpuctk::cgroup {

namespace {

// --- /proc/<pid>/cgroup and mountinfo ----------------------------------------------------------------

// The lines of `text` (the last one may lack its '\n'; empty lines are kept, callers skip them), or an
// error "<name> line N: longer than ..." for the first line over the bound.
Result<std::vector<std::string_view>> bounded_lines(std::string_view text, std::string_view name,
                                                    size_t max_size) {
  if (text.size() > max_size) {
    return fail(std::string(name) + ": larger than " + std::to_string(max_size) + " bytes");
  }
  std::vector<std::string_view> lines = split(text, '\n');
  for (size_t n = 0; n < lines.size(); ++n) {
    if (lines[n].size() > k_max_line_size) {
      return fail(std::string(name) + " line " + std::to_string(n + 1) + ": longer than " +
                  std::to_string(k_max_line_size) + " bytes");
    }
  }
  return lines;
}

// Whether `controllers` ("cpu,cpuacct", the super options "rw,devices") lists `name`.
bool lists(std::string_view controllers, std::string_view name) {
  for (const std::string_view item : split(controllers, ',')) {
    if (item == name) {
      return true;
    }
  }
  return false;
}

// The cgroup paths of one process, where its cgroup list has such a line.
struct ProcessCgroups {
  std::optional<std::string> devices;  // the path in the v1 hierarchy with the devices controller
  std::optional<std::string> unified;  // the path of the "0::" line
};

// A cgroup path as the kernel prints it for a process in the reader's cgroup namespace: absolute, no
// "." or ".." (a process outside the namespace shows as "/../x").
Result<void> check_cgroup_path(std::string_view path) {
  if (!path.starts_with('/')) {
    return fail("cgroup path " + quote(path) + " is not absolute");
  }
  for (const std::string_view component : split(path.substr(1), '/')) {
    if (component == "." || component == "..") {
      return fail("cgroup path " + quote(path) + " has a " + quote(component) +
                  " component (a process outside this cgroup namespace)");
    }
  }
  return {};
}

Result<ProcessCgroups> parse_proc_cgroup(std::string_view text, std::string_view name) {
  GPUCTK_TRY_ASSIGN(const auto lines, bounded_lines(text, name, k_max_proc_cgroup_size));
  ProcessCgroups found;
  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    if (line.empty()) {
      continue;
    }
    // "hierarchy-ID:controller-list:cgroup-path"; the path may itself hold ':'.
    const size_t first = line.find(':');
    const size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    const auto where = [&] { return std::string(name) + " line " + std::to_string(n + 1); };
    if (second == std::string_view::npos || !parse_unsigned(line.substr(0, first))) {
      return fail(where() + ": not ID:CONTROLLERS:PATH: " + quote(line));
    }
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string_view path = line.substr(second + 1);
    const bool unified = line.substr(0, first) == "0" && controllers.empty();
    if (!unified && !lists(controllers, "devices")) {
      continue;
    }
    std::optional<std::string>& slot = unified ? found.unified : found.devices;
    if (!slot) {
      if (auto checked = check_cgroup_path(path); !checked) {
        return fail_with(where(), checked.error());
      }
      slot = std::string(path);
    }
  }
  if (!found.devices && !found.unified) {
    return fail(std::string(name) + ": no devices controller line and no 0:: line");
  }
  return found;
}

struct CgroupMount {
  std::string root;         // the directory of the hierarchy the mount shows ("/" for all of it)
  std::string mount_point;  // where, in the caller's mount namespace
};

// The directory of cgroup `path` as seen through `mount`, or nothing when `path` is not below the
// mount's root.
std::optional<std::string> directory_in(const CgroupMount& mount, std::string_view path) {
  std::string_view relative;
  if (mount.root == "/") {
    relative = path;
  } else if (path == mount.root) {
    relative = "";
  } else if (path.starts_with(mount.root) && path[mount.root.size()] == '/') {
    relative = path.substr(mount.root.size());
  } else {
    return std::nullopt;
  }
  if (relative == "/") {
    relative = "";
  }
  if (mount.mount_point == "/") {
    return relative.empty() ? std::string("/") : std::string(relative);
  }
  return mount.mount_point + std::string(relative);
}

struct CgroupMounts {
  std::vector<CgroupMount> devices;    // fstype "cgroup" with the devices controller, in mountinfo order
  std::optional<CgroupMount> unified;  // the first "cgroup2"
};

Result<CgroupMounts> cgroup_mounts(std::string_view text, std::string_view name) {
  GPUCTK_TRY_ASSIGN(auto table, parse_mountinfo(text, name));
  CgroupMounts mounts;
  for (auto& entry : table) {
    const bool devices = entry.fstype == "cgroup" && lists(entry.super_options, "devices");
    const bool unified = entry.fstype == "cgroup2" && !mounts.unified;
    if (devices || unified) {
      CgroupMount mount{std::move(entry.root), std::move(entry.mount_point)};
      if (devices) {
        mounts.devices.push_back(std::move(mount));
      } else {
        mounts.unified = std::move(mount);
      }
    }
  }
  return mounts;
}

Result<DeviceCgroups> parse_named(std::string_view proc_cgroup, std::string_view cgroup_name,
                                  std::string_view mountinfo, std::string_view mountinfo_name) {
  GPUCTK_TRY_ASSIGN(ProcessCgroups process, parse_proc_cgroup(proc_cgroup, cgroup_name));
  GPUCTK_TRY_ASSIGN(const CgroupMounts mounts, cgroup_mounts(mountinfo, mountinfo_name));
  DeviceCgroups found;
  // A process in a hierarchy's root cgroup has no cgroup of its own there: the root's device access is
  // the whole host's (v1: it allows everything and cannot be changed; v2: a program there would filter
  // every process). That hierarchy is left out.
  if (process.devices && *process.devices == "/") {
    process.devices.reset();
  }
  if (process.unified && *process.unified == "/") {
    process.unified.reset();
  }
  if (process.devices) {
    if (mounts.devices.empty()) {
      return fail(std::string(mountinfo_name) + ": no cgroup mount with the devices controller, which " +
                  std::string(cgroup_name) + " names");
    }
    for (const CgroupMount& mount : mounts.devices) {
      if (auto dir = directory_in(mount, *process.devices)) {
        found.v1_dir = std::move(*dir);
        break;
      }
    }
    if (found.v1_dir.empty()) {
      return fail(std::string(cgroup_name) + ": devices cgroup " + quote(*process.devices) +
                  " is outside the root of every devices mount (first: " + quote(mounts.devices[0].root) +
                  " on " + quote(mounts.devices[0].mount_point) + ")");
    }
  }
  if (process.unified && mounts.unified) {
    auto dir = directory_in(*mounts.unified, *process.unified);
    if (!dir) {
      return fail(std::string(cgroup_name) + ": cgroup2 path " + quote(*process.unified) +
                  " is outside the root " + quote(mounts.unified->root) + " of the cgroup2 mount on " +
                  quote(mounts.unified->mount_point));
    }
    found.v2_dir = std::move(*dir);
  }
  return found;
}

// --- cgroup v1 ---------------------------------------------------------------------------------------

Result<size_t> allow_v1(const std::string& dir, std::span<const DeviceRule> rules) {
  const std::string what = "cgroup v1 " + dir;
  const std::string path = dir + "/devices.allow";
  UniqueFd file(::open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!file) {
    return fail_errno(what + ": open devices.allow", errno);
  }
  for (const DeviceRule& rule : rules) {
    // One rule per write(): the kernel parses each write as one rule.
    const std::string line = rule_text(rule);
    const ssize_t written = ::write(file.get(), line.data(), line.size());
    if (written < 0) {
      return fail_errno(what + ": write devices.allow " + quote(line), errno);
    }
    if (static_cast<size_t>(written) != line.size()) {
      return fail(what + ": write devices.allow " + quote(line) + ": short write");
    }
  }
  return rules.size();
}

// --- cgroup v2 ---------------------------------------------------------------------------------------

// The most programs one cgroup holds per attach type (the kernel's BPF_CGROUP_MAX_PROGS): a query
// buffer this large never gets ENOSPC.
constexpr uint32_t k_max_attached = 64;

// The verifier log is read only when a load fails. A failed load whose log did not fit reports ENOSPC
// instead of its own error, so the buffer is large; newer kernels keep the log's end, where the error is.
constexpr size_t k_verifier_log_size = size_t{1} << 20;

// libbpf returns -errno (and sets errno, which a later call may change).
int bpf_error(int rc) {
  return rc < 0 ? -rc : errno;
}

// The line of a verifier log that says why the program was refused: the last one, the statistics
// ("processed N insns ...", "verification time ...") aside.
std::string verifier_reason(std::string_view log) {
  std::string_view reason;
  for (const std::string_view line : split(log, '\n')) {
    const std::string_view trimmed = trim(line);
    if (!trimmed.empty() && !trimmed.starts_with("processed ") && !trimmed.starts_with("verification time") &&
        !trimmed.starts_with("stack depth")) {
      reason = trimmed;
    }
  }
  return std::string(reason);
}

// One program attached to the cgroup, and its widened replacement, loaded but not attached.
struct Replacement {
  uint32_t old_id = 0;
  UniqueFd old_program;
  UniqueFd new_program;
};

// The translated instructions of the program `fd`.
Result<std::vector<bpf_insn>> dump_program(int fd) {
  bpf_prog_info info{};
  uint32_t size = sizeof(info);
  if (const int rc = bpf_obj_get_info_by_fd(fd, &info, &size); rc != 0) {
    return fail_errno("BPF_OBJ_GET_INFO_BY_FD", bpf_error(rc));
  }
  if (info.type != BPF_PROG_TYPE_CGROUP_DEVICE) {
    return fail("not a BPF_PROG_TYPE_CGROUP_DEVICE program (type " + std::to_string(info.type) + ")");
  }
  const size_t count = info.xlated_prog_len / sizeof(bpf_insn);
  if (count == 0) {
    return fail("cannot widen it: the kernel dumps no instructions (kptr_restrict or JIT constant blinding)");
  }
  if (count > k_max_program_insns) {
    return fail("cannot widen it: " + std::to_string(count) + " instructions");
  }
  // Zero-filled: a kernel that hides the instructions leaves the buffer as it is.
  std::vector<bpf_insn> insns(count);
  info = bpf_prog_info{};
  info.xlated_prog_len = static_cast<uint32_t>(count * sizeof(bpf_insn));
  info.xlated_prog_insns = reinterpret_cast<uintptr_t>(insns.data());
  size = sizeof(info);
  if (const int rc = bpf_obj_get_info_by_fd(fd, &info, &size); rc != 0) {
    return fail_errno("BPF_OBJ_GET_INFO_BY_FD", bpf_error(rc));
  }
  insns.resize(std::min<size_t>(count, info.xlated_prog_len / sizeof(bpf_insn)));
  return insns;
}

Result<UniqueFd> load_program(std::span<const bpf_insn> insns) {
  const auto log = std::make_unique_for_overwrite<char[]>(k_verifier_log_size);
  log[0] = '\0';
  bpf_prog_load_opts opts{};
  opts.sz = sizeof(opts);
  // Log level 0 with a buffer: libbpf loads without a log and, only when that fails, again with one.
  opts.log_buf = log.get();
  opts.log_size = static_cast<uint32_t>(k_verifier_log_size);
  // The license matters only for GPL-only helpers, and a widened program calls none. RLIMIT_MEMLOCK is
  // libbpf's business: bpf_prog_load raises it itself, and only on kernels that do not charge BPF memory
  // to the memory cgroup (< 5.11, found by a probe load once per process; none is raised on 6.x, seen
  // with strace).
  const int fd = bpf_prog_load(BPF_PROG_TYPE_CGROUP_DEVICE, "gpuctk_devices", "Apache-2.0", insns.data(),
                               insns.size(), &opts);
  if (fd < 0) {
    const int err = bpf_error(fd);
    log[k_verifier_log_size - 1] = '\0';
    std::string message = fail_errno("BPF_PROG_LOAD", err).error().message;
    if (const std::string reason = verifier_reason(log.get()); !reason.empty()) {
      message.append(" (verifier: ").append(reason).append(")");
    }
    return fail(std::move(message));
  }
  return UniqueFd(fd);
}

// Every program attached to the cgroup `cgroup` itself, each with its widened replacement loaded.
Result<std::vector<Replacement>> prepare_v2(int cgroup, std::span<const DeviceRule> rules,
                                            uint32_t& attach_flags) {
  uint32_t ids[k_max_attached] = {};
  uint32_t count = k_max_attached;
  if (const int rc = bpf_prog_query(cgroup, BPF_CGROUP_DEVICE, 0, &attach_flags, ids, &count); rc != 0) {
    return fail_errno("BPF_PROG_QUERY", bpf_error(rc));
  }
  std::vector<Replacement> replacements;
  for (uint32_t n = 0; n < count && n < k_max_attached; ++n) {
    const std::string what = "program " + std::to_string(ids[n]);
    Replacement replacement;
    replacement.old_id = ids[n];
    const int fd = bpf_prog_get_fd_by_id(ids[n]);
    if (fd < 0) {
      // Not skipped: a program we cannot read still filters, and the devices would stay denied.
      return fail_errno(what + ": BPF_PROG_GET_FD_BY_ID", bpf_error(fd));
    }
    replacement.old_program.reset(fd);
    auto old = dump_program(fd);
    if (!old) {
      return fail_with(what, old.error());
    }
    auto widened = widen_program(rules, *old);
    if (!widened) {
      return fail_with(what + ": cannot widen it", widened.error());
    }
    auto loaded = load_program(*widened);
    if (!loaded) {
      return fail_with(what, loaded.error());
    }
    replacement.new_program = std::move(*loaded);
    replacements.push_back(std::move(replacement));
  }
  return replacements;
}

Result<void> attach_v2(int cgroup, uint32_t attach_flags, std::vector<Replacement>& replacements) {
  for (Replacement& r : replacements) {
    const std::string what = "program " + std::to_string(r.old_id);
    if ((attach_flags & BPF_F_ALLOW_MULTI) == 0) {
      // One program per cgroup (attached with flags 0 or BPF_F_ALLOW_OVERRIDE): attaching another with
      // the same flags replaces it in one step.
      if (const int rc = bpf_prog_attach(r.new_program.get(), cgroup, BPF_CGROUP_DEVICE, attach_flags);
          rc != 0) {
        return fail_errno(what + ": BPF_PROG_ATTACH (replacing it)", bpf_error(rc));
      }
      continue;
    }
    // Attach before detach: with several programs attached the kernel allows an access only if every
    // one allows it, so until the old program is detached it still decides, and the cgroup is never
    // left unfiltered. (Detaching first, as libnvidia-container does, opens every device in between,
    // and for good when the attach then fails.)
    if (const int rc = bpf_prog_attach(r.new_program.get(), cgroup, BPF_CGROUP_DEVICE, BPF_F_ALLOW_MULTI);
        rc != 0) {
      return fail_errno(what + ": BPF_PROG_ATTACH of its widened copy", bpf_error(rc));
    }
    if (const int rc = bpf_prog_detach2(r.old_program.get(), cgroup, BPF_CGROUP_DEVICE); rc != 0) {
      const int err = bpf_error(rc);
      // Both attached allow only what the old one allows; take the new one away so nothing is left over.
      (void)bpf_prog_detach2(r.new_program.get(), cgroup, BPF_CGROUP_DEVICE);
      return fail_errno(what + ": BPF_PROG_DETACH", err);
    }
  }
  return {};
}

}  // namespace

Result<DeviceCgroups> parse_device_cgroups(std::string_view proc_cgroup, std::string_view mountinfo) {
  return parse_named(proc_cgroup, "/proc/<pid>/cgroup", mountinfo, "/proc/self/mountinfo");
}

Result<DeviceCgroups> find_device_cgroups(int pid, const std::string& proc_root) {
  const std::string cgroup_path = proc_root + "/" + std::to_string(pid) + "/cgroup";
  const std::string mountinfo_path = proc_root + "/self/mountinfo";
  GPUCTK_TRY_ASSIGN(const std::string cgroup, read_file(cgroup_path, k_max_proc_cgroup_size));
  GPUCTK_TRY_ASSIGN(const std::string mountinfo, read_file(mountinfo_path, k_max_mountinfo_size));
  return parse_named(cgroup, cgroup_path, mountinfo, mountinfo_path);
}

Result<DeviceCgroups> find_device_cgroups(const Process& process) {
  const std::string mountinfo_path = "/proc/self/mountinfo";
  GPUCTK_TRY_ASSIGN(const std::string cgroup, process.read("cgroup", k_max_proc_cgroup_size));
  GPUCTK_TRY_ASSIGN(const std::string mountinfo, read_file(mountinfo_path, k_max_mountinfo_size));
  return parse_named(cgroup, process.proc_path("cgroup"), mountinfo, mountinfo_path);
}

Result<AllowReport> allow_devices(const DeviceCgroups& cgroups, std::span<const DeviceRule> rules) {
  for (const DeviceRule& rule : rules) {
    GPUCTK_TRY(check_rule(rule));
  }
  AllowReport report;
  if (rules.empty()) {
    return report;  // nothing to add: no program is swapped for an equal copy
  }
  // v2 is prepared first (programs read, widened, loaded): a program that cannot be widened fails the
  // call before anything, v1 included, has changed.
  const std::string v2_what = "cgroup v2 " + cgroups.v2_dir;
  UniqueFd v2_cgroup;
  uint32_t attach_flags = 0;
  std::vector<Replacement> replacements;
  if (!cgroups.v2_dir.empty()) {
    v2_cgroup.reset(::open(cgroups.v2_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!v2_cgroup) {
      return fail_errno(v2_what + ": open", errno);
    }
    auto prepared = prepare_v2(v2_cgroup.get(), rules, attach_flags);
    if (!prepared) {
      return fail_with(v2_what, prepared.error());
    }
    replacements = std::move(*prepared);
    report.v2_unrestricted = replacements.empty();
  }
  if (!cgroups.v1_dir.empty()) {
    GPUCTK_TRY_ASSIGN(report.v1_rules, allow_v1(cgroups.v1_dir, rules));
  }
  if (!replacements.empty()) {
    if (auto attached = attach_v2(v2_cgroup.get(), attach_flags, replacements); !attached) {
      return fail_with(v2_what, attached.error());
    }
    report.v2_programs_replaced = replacements.size();
  }
  return report;
}

}  // namespace gpuctk::cgroup
