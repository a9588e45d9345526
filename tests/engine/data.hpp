#pragma once
// The engine config files of tests/data/engine (its README says what each one is), and settings to
// configure them with.

#include <string>

#include "engine/configure.hpp"
#include "util/file.hpp"

namespace gpuctk::test {

inline std::string engine_data_path(const std::string& name) {
  return std::string(GPUCTK_SOURCE_DIR) + "/tests/data/engine/" + name;
}

// The bytes of tests/data/engine/<name>; "" (and a failed test) when it cannot be read.
inline std::string engine_data(const std::string& name) {
  return read_file(engine_data_path(name)).value_or("");
}

inline constexpr const char* k_shim = "/usr/bin/gpuctk-runtime";

// Runtime "nvidia" at /usr/bin/gpuctk-runtime, changed by `change`.
template <class Change>
engine::RuntimeSettings shim_settings(Change change) {
  engine::RuntimeSettings settings;
  settings.runtime_path = k_shim;
  change(settings);
  return settings;
}

inline engine::RuntimeSettings shim_settings() {
  return shim_settings([](engine::RuntimeSettings&) {});
}

}  // namespace gpuctk::test
