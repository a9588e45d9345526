#pragma once
// Resolution of qualified CDI device names for injection (inject/inject.cpp): the spec directories, with
// the configured kind's devices replaced by an in-memory spec (inject/in_memory_spec.hpp) when the
// installed spec of that kind is missing or was generated for another driver than the running one.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cdi/registry.hpp"
#include "cdi/spec.hpp"
#include "config/config.hpp"
#include "config/log.hpp"
#include "util/error.hpp"

namespace gpuctk::inject {

// The running driver's version, from <dev-root>/proc/driver/nvidia/version, read at most once per
// request (the requirements and the spec staleness check both want it). Empty when unknown.
class RunningDriver {
 public:
  explicit RunningDriver(const config::Config& cfg) : m_cfg(cfg) {}
  const std::string& version();

 private:
  const config::Config& m_cfg;
  std::optional<std::string> m_version;
};

// The driver version a generated spec was made for: the enable-cuda-compat hook's argument (gpuctk writes
// "--host-driver-version V", nvidia-ctk "--host-driver-version=V"), else the version suffix of the libcuda
// it mounts. Empty when the spec does not say.
std::string spec_driver_version(const cdi::Spec& spec);

// How many device names the error of an unknown device lists.
constexpr size_t k_listed_devices = 10;

// The devices that can be resolved, from the spec directories or an in-memory spec.
class SpecResolver {
 public:
  SpecResolver(const config::Config& cfg, const config::Log& log, RunningDriver& driver)
      : m_cfg(cfg), m_log(log), m_driver(driver) {}

  // Loads the spec directories (each spec problem logged as a warning); when `need_default_kind`,
  // replaces the configured kind's devices with an in-memory spec when the installed one is missing or
  // stale (logged as a warning). Errors: "<why>; building it in memory failed: <discovery's error>".
  Result<void> load(bool need_default_kind);

  // The devices named `names` (qualified), or "unknown device \"<name>\" (devices: <up to
  // k_listed_devices names> and N more; gpuctk cdi list shows all)" / "(no devices of <kind> are
  // defined)".
  Result<std::vector<const cdi::ResolvedDevice*>> find(const std::vector<std::string>& names) const;

  // A spec of the configured kind (for "none": its common edits only); nullptr when there is none.
  [[nodiscard]] std::shared_ptr<const cdi::Spec> default_spec() const;

  // The spec file(s) used, or "in-memory spec (driver <version>)".
  [[nodiscard]] const std::string& source() const { return m_source; }

 private:
  [[nodiscard]] std::string existing(const std::string& wanted) const;
  Result<void> build_in_memory(const std::string& why);

  const config::Config& m_cfg;
  const config::Log& m_log;
  RunningDriver& m_driver;
  cdi::Registry m_registry;
  std::string m_source;
};

}  // namespace gpuctk::inject
