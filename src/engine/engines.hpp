#pragma once
// The file format of each engine, behind configure.hpp (internal to src/engine). Each function is pure:
// text in, text out, and says what it changed so that configure() can write one line about it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/configure.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

namespace gpuctk::engine::detail {

struct Edit {
  std::string text;                  // the new text; the old text itself when `changes` is empty
  std::vector<std::string> changes;  // what changed, each a phrase of the summary
  std::vector<std::string> notes;    // said whether or not anything changed (CRI-O and --cdi)
};

Result<Edit> containerd_configure(const std::optional<std::string>& old, const RuntimeSettings& settings);
Result<Edit> containerd_remove(const std::string& old, const RuntimeSettings& settings);
Result<Edit> crio_configure(const std::optional<std::string>& old, const RuntimeSettings& settings);
Result<Edit> crio_remove(const std::string& old, const RuntimeSettings& settings);
Result<Edit> docker_configure(const std::optional<std::string>& old, const RuntimeSettings& settings);
Result<Edit> docker_remove(const std::string& old, const RuntimeSettings& settings);

// The phrases of the summary, the same for every engine.

// `runtime "nvidia" (/usr/bin/gpuctk-runtime) added`, `… updated (was /usr/bin/nvidia-container-runtime)`.
inline std::string runtime_phrase(const RuntimeSettings& settings, bool added, std::string_view was) {
  std::string phrase = "runtime " + quote(settings.name) + " (" + settings.runtime_path + ")";
  phrase += added ? " added" : " updated";
  if (!was.empty() && was != settings.runtime_path) {
    phrase += " (was " + std::string(was) + ")";
  }
  return phrase;
}

// `default runtime set to "nvidia" (was "runc")`.
inline std::string default_phrase(std::string_view name, std::string_view was) {
  std::string phrase = "default runtime set to " + quote(name);
  if (!was.empty()) {
    phrase += " (was " + quote(was) + ")";
  }
  return phrase;
}

inline std::string removed_phrase(std::string_view name) {
  return "runtime " + quote(name) + " removed";
}

inline std::string default_unset_phrase(std::string_view name) {
  return "default runtime " + quote(name) + " unset";
}

inline constexpr std::string_view k_cdi_enabled = "CDI enabled";

}  // namespace gpuctk::engine::detail
