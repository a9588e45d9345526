#include "cdi/validate.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "cdi/version.hpp"
#include "util/k8s_names.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

// Device node types.
constexpr std::array<std::string_view, 5> k_node_types{
    "",   // taken from the host node at injection
    "b",  // block device
    "c",  // character device
    "u",  // unbuffered character device (needs an explicit major)
    "p",  // FIFO
};

// Annotations: keys plus values of one map (Kubernetes' TotalAnnotationSizeLimitB).
constexpr size_t k_max_annotations_size = 256 * 1024;
// Kubernetes qualified-name limit of the name part (the prefix's is k_max_dns_subdomain).
constexpr size_t k_max_annotation_name = 63;
// Linux resctrl group names (the reference's closID rule).
constexpr size_t k_max_clos_id = 4095;

bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// Why `key` is not a Kubernetes qualified name (checked lower-cased, as the reference does).
std::optional<std::string> annotation_key_problem(std::string_view key) {
  const auto parts = split(key, '/');
  if (parts.size() > 2) {
    return R"(more than one "/")";
  }
  std::string_view name = parts.back();
  if (parts.size() == 2) {
    const std::string_view prefix = parts.front();
    if (prefix.empty()) {
      return R"(empty prefix before "/")";
    }
    if (prefix.size() > k_max_dns_subdomain) {
      return "prefix longer than " + std::to_string(k_max_dns_subdomain) + " characters";
    }
    std::string lower(prefix);
    std::ranges::transform(lower, lower.begin(), [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    });
    if (!is_dns_subdomain(lower)) {
      return "prefix " + quote(prefix) + " is not a DNS subdomain (letters, digits, \"-\" and \".\"; " +
             "each label starts and ends with a letter or digit)";
    }
  }
  if (name.empty()) {
    return "empty name";
  }
  if (name.size() > k_max_annotation_name) {
    return "name longer than " + std::to_string(k_max_annotation_name) + " characters";
  }
  if (!is_alnum(name.front()) || !is_alnum(name.back()) ||
      !std::ranges::all_of(name, [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; })) {
    return "name " + quote(name) + " must start and end with a letter or digit and contain only letters, " +
           "digits, \"-\", \"_\" and \".\"";
  }
  return std::nullopt;
}

// True when `entry` is KEY=VALUE with a non-empty KEY ("B=" is fine).
bool is_valid_env(std::string_view entry) {
  const auto equals = entry.find('=');
  return equals != std::string_view::npos && equals > 0;
}

std::string env_problem(std::string_view entry) {
  return "invalid environment variable " + quote(entry) + " (want KEY=VALUE with a non-empty KEY)";
}

std::string index(std::string_view path, size_t i) {
  return std::string(path) + "[" + std::to_string(i) + "]";
}

class Validator {
 public:
  explicit Validator(const Spec& spec) : m_spec(spec), m_declared(parse_version(spec.cdi_version)) {}

  std::vector<Problem> run() && {
    check_version();
    check_kind();
    check_annotations(m_spec.annotations, "annotations");
    check_devices();
    check_edits(m_spec.container_edits, "containerEdits");
    return std::move(m_problems);
  }

 private:
  void add(std::string where, std::string what) { m_problems.push_back({std::move(where), std::move(what)}); }

  void check_version() {
    if (m_spec.cdi_version.empty()) {
      add("cdiVersion", "missing cdiVersion");
      return;
    }
    if (!m_declared || !is_known_version(*m_declared)) {
      std::vector<std::string> known;
      for (const auto& v : known_versions()) {
        known.push_back(v.str());
      }
      add("cdiVersion",
          "unknown cdiVersion " + quote(m_spec.cdi_version) + " (known: " + join(known, ", ") + ")");
      m_declared.reset();
      return;
    }
    const Requirement needed = minimum_version(m_spec);
    if (needed.version > *m_declared) {
      add("cdiVersion", "cdiVersion " + quote(m_spec.cdi_version) + " is lower than " + needed.version.str() +
                            ", which this spec needs for " + needed.trigger);
    }
  }

  void check_kind() {
    if (m_spec.kind.empty()) {
      add("kind", "missing kind (want vendor/class)");
      return;
    }
    if (m_spec.kind.find('/') == std::string::npos) {
      add("kind", "kind " + quote(m_spec.kind) + R"( has no "/" (want vendor/class))");
      return;
    }
    const auto [vendor, klass] = split_kind(m_spec.kind);
    if (auto ok = check_vendor(vendor); !ok) {
      add("kind", ok.error().message);
    }
    if (auto ok = check_class(klass); !ok) {
      add("kind", ok.error().message);
    }
  }

  void check_annotations(const std::map<std::string, std::string>& annotations, const std::string& where) {
    size_t total = 0;
    for (const auto& [key, value] : annotations) {
      total += key.size() + value.size();
      if (const auto problem = annotation_key_problem(key)) {
        add(where, "invalid annotation key " + quote(key) + ": " + *problem);
      }
    }
    if (total > k_max_annotations_size) {
      add(where, "annotations take " + std::to_string(total) + " bytes, more than " +
                     std::to_string(k_max_annotations_size) + " (256 KiB)");
    }
  }

  void check_devices() {
    if (m_spec.devices.empty()) {
      add("devices", "no devices (a spec needs at least one)");
    }
    std::map<std::string_view, size_t> first_index;
    for (size_t i = 0; i < m_spec.devices.size(); ++i) {
      const Device& device = m_spec.devices[i];
      const std::string where = index("devices", i);
      if (auto ok = check_device_name(device.name); !ok) {
        add(where + ".name", ok.error().message);
      } else if (const auto [it, inserted] = first_index.emplace(device.name, i); !inserted) {
        add(where + ".name",
            "duplicate device name " + quote(device.name) + " (also " + index("devices", it->second) + ")");
      }
      check_annotations(device.annotations, where + ".annotations");
      if (device.container_edits.empty()) {
        add(where + ".containerEdits",
            "no container edits (a device needs at least one of env, deviceNodes, mounts, hooks, intelRdt, "
            "additionalGids, netDevices)");
      }
      check_edits(device.container_edits, where + ".containerEdits");
    }
  }

  void check_edits(const ContainerEdits& edits, const std::string& where) {
    for (size_t i = 0; i < edits.env.size(); ++i) {
      if (!is_valid_env(edits.env[i])) {
        add(index(where + ".env", i), env_problem(edits.env[i]));
      }
    }
    for (size_t i = 0; i < edits.device_nodes.size(); ++i) {
      check_device_node(edits.device_nodes[i], index(where + ".deviceNodes", i));
    }
    for (size_t i = 0; i < edits.mounts.size(); ++i) {
      check_mount(edits.mounts[i], index(where + ".mounts", i));
    }
    for (size_t i = 0; i < edits.hooks.size(); ++i) {
      check_hook(edits.hooks[i], index(where + ".hooks", i));
    }
    if (edits.intel_rdt) {
      check_intel_rdt(*edits.intel_rdt, where + ".intelRdt");
    }
    check_net_devices(edits.net_devices, where + ".netDevices");
  }

  void check_absolute(std::string_view path, std::string_view noun, const std::string& where) {
    if (path.empty()) {
      add(where, "empty " + std::string(noun));
    } else if (path.front() != '/') {
      add(where, std::string(noun) + " " + quote(path) + " is not absolute");
    }
  }

  void check_device_node(const DeviceNode& node, const std::string& where) {
    check_absolute(node.path, "device node path", where + ".path");
    if (std::ranges::find(k_node_types, node.type) == k_node_types.end()) {
      add(where + ".type",
          "invalid device node type " + quote(node.type) + R"( (want "b", "c", "u", "p" or none))");
    } else if (node.type == "u" && !node.major) {
      add(where + ".type", R"(device node type "u" needs a major (a host node never stats as "u"))");
    }
    if (node.permissions == "none") {
      add(where + ".permissions",
          R"(device node permissions "none" are rejected by released CDI libraries (up to v1.1.0); )"
          R"(use letters of "rwm" or leave it empty)");
    } else if (node.permissions.find_first_not_of("rwm") != std::string::npos) {
      add(where + ".permissions",
          "invalid device node permissions " + quote(node.permissions) + R"( (want letters of "rwm"))");
    }
  }

  void check_mount(const Mount& mount, const std::string& where) {
    if (mount.host_path.empty()) {
      add(where + ".hostPath", "empty mount hostPath");
    }
    check_absolute(mount.container_path, "mount containerPath", where + ".containerPath");
  }

  void check_hook(const Hook& hook, const std::string& where) {
    if (std::ranges::find(k_hook_names, hook.hook_name) == k_hook_names.end()) {
      add(where + ".hookName",
          "invalid hook name " + quote(hook.hook_name) + " (want one of " + join(k_hook_names, ", ") + ")");
    }
    check_absolute(hook.path, "hook path", where + ".path");
    for (size_t i = 0; i < hook.env.size(); ++i) {
      if (!is_valid_env(hook.env[i])) {
        add(index(where + ".env", i), env_problem(hook.env[i]));
      }
    }
    if (hook.timeout && *hook.timeout <= 0) {
      add(where + ".timeout", "hook timeout must be greater than 0, not " + std::to_string(*hook.timeout));
    }
  }

  void check_intel_rdt(const IntelRdt& rdt, const std::string& where) {
    const std::string& id = rdt.clos_id;
    if (id != "/") {  // "/" is the root CLOS
      if (id.size() > k_max_clos_id) {
        add(where + ".closID", "closID is " + std::to_string(id.size()) + " characters long; the limit is " +
                                   std::to_string(k_max_clos_id));
      } else if (id == "." || id == "..") {
        add(where + ".closID", "closID " + quote(id) + " is not a group name");
      } else if (id.find('/') != std::string::npos) {
        add(where + ".closID", "closID " + quote(id) + R"( contains "/")");
      } else if (id.find('\n') != std::string::npos) {
        add(where + ".closID", "closID " + quote(id) + " contains a newline");
      }
    }
    // enableCMT/enableMBM were removed in 1.1.0: a 1.1.0 library rejects the keys, an older one the
    // version, so no released library can load such a spec.
    if (m_declared && *m_declared >= Version{1, 1, 0}) {
      for (const auto& [set, key] :
           {std::pair{rdt.enable_cmt, "enableCMT"}, std::pair{rdt.enable_mbm, "enableMBM"}}) {
        if (set) {
          add(where + "." + key, std::string(key) + " does not exist in cdiVersion 1.1.0 and later " +
                                     "(removed; CDI libraries from v1.1.0 reject it)");
        }
      }
    }
  }

  void check_net_devices(const std::vector<NetDevice>& devices, const std::string& where) {
    std::map<std::string_view, size_t> host_names;
    std::map<std::string_view, size_t> names;
    for (size_t i = 0; i < devices.size(); ++i) {
      const NetDevice& device = devices[i];
      const std::string here = index(where, i);
      if (device.host_interface_name.empty()) {
        add(here + ".hostInterfaceName", "empty hostInterfaceName");
      } else if (const auto [it, inserted] = host_names.emplace(device.host_interface_name, i); !inserted) {
        add(here + ".hostInterfaceName", "duplicate hostInterfaceName " + quote(device.host_interface_name) +
                                             " (also " + index(where, it->second) + ")");
      }
      if (device.name.empty()) {
        add(here + ".name", "empty net device name");
      } else if (const auto [it, inserted] = names.emplace(device.name, i); !inserted) {
        add(here + ".name",
            "duplicate net device name " + quote(device.name) + " (also " + index(where, it->second) + ")");
      }
    }
  }

  const Spec& m_spec;
  std::optional<Version> m_declared;  // set when cdiVersion is a known version
  std::vector<Problem> m_problems;
};

}  // namespace

std::vector<Problem> validate(const Spec& spec) {
  return Validator(spec).run();
}

Result<void> check_generated(const Spec& spec) {
  if (const auto problems = validate(spec); !problems.empty()) {
    return fail("generated " + spec.kind + " spec is invalid: " + problems.front().where + ": " +
                problems.front().what);
  }
  return {};
}

}  // namespace gpuctk::cdi
