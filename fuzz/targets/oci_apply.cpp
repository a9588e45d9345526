// config.json, the request read from it, and CDI edits applied to it: oci::parse_config,
// inject::read_request and cdi::apply_edits (the edit step of inject/inject.cpp, without its host
// discovery), on a fuzzed config and a fuzzed spec. Input layout: fuzz/support/fuzz_support.hpp
// (flags byte, config.json, NUL, spec).
//
// Invariants:
//  - dump_config of a parsed config reads back to the same text (a fixed point after one dump);
//  - read_request: a result that is not a GPU container carries no devices; `all` has no plain ids;
//  - apply_edits (spec-wide edits merged with each device's, then with every device's): a failed apply
//    leaves the config exactly as it was and is never a caught nlohmann exception (the type checks come
//    first); a successful one keeps every top-level key in its place and the value of every key it
//    does not edit, and applying the same edits twice gives the DOM of applying them once.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cdi/apply.hpp"
#include "cdi/codec.hpp"
#include "inject/request.hpp"
#include "oci/bundle.hpp"
#include "support/fuzz_support.hpp"

namespace {

using gpuctk::fuzz::invariant_broken;
namespace cdi = gpuctk::cdi;

// The top-level keys of config.json that CDI edits change (env and user are in process).
const std::set<std::string> k_edited_keys{"process", "linux", "mounts", "hooks"};

// Spec files have a handful of devices; more only slows the target down.
constexpr size_t k_max_devices = 8;

void check_request(const nlohmann::ordered_json& config, uint8_t flags) {
  gpuctk::config::RequestConfig rc;
  rc.accept_envvar_when_unprivileged = (flags & gpuctk::fuzz::k_envvar_when_unprivileged) != 0;
  rc.accept_volume_mounts = (flags & gpuctk::fuzz::k_volume_mounts) != 0;
  rc.disable_require = (flags & gpuctk::fuzz::k_disable_require) != 0;
  (void)gpuctk::inject::is_privileged(config);
  const auto request = gpuctk::inject::read_request(config, rc);
  if (!request) {
    return;
  }
  if (!request->gpu_container) {
    GPUCTK_FUZZ_CHECK(request->devices.empty() && request->cdi_devices.empty() && !request->all,
                      gpuctk::oci::dump_config(config));
  }
  if (request->all) {
    GPUCTK_FUZZ_CHECK(request->devices.empty(), gpuctk::oci::dump_config(config));
  }
}

void check_apply(const nlohmann::ordered_json& original, const cdi::ContainerEdits& edits) {
  static const auto stat = gpuctk::fuzz::fake_host_nodes();
  auto config = original;
  const auto applied = cdi::apply_edits(config, edits, stat);
  if (!applied) {
    // apply_edits checks every type before it touches the DOM; its catch of nlohmann's exceptions is
    // documented as unreachable.
    GPUCTK_FUZZ_CHECK(applied.error().message.find("[json.exception.") == std::string::npos,
                      applied.error().message);
    if (config != original) {
      invariant_broken("a failed apply leaves the config unchanged",
                       applied.error().message + "\nbefore: " + gpuctk::oci::dump_config(original) +
                           "\nafter:  " + gpuctk::oci::dump_config(config));
    }
    return;
  }
  // Keys the edits do not touch keep their values, and every key keeps its place.
  auto next = config.begin();
  for (auto it = original.begin(); it != original.end(); ++it) {
    while (next != config.end() && next.key() != it.key()) {
      ++next;
    }
    GPUCTK_FUZZ_CHECK(next != config.end(), "top-level key moved or lost: " + it.key());
    if (!k_edited_keys.contains(it.key())) {
      GPUCTK_FUZZ_CHECK(next.value() == it.value(), "untouched key changed: " + it.key());
    }
  }
  auto twice = config;
  const auto again = cdi::apply_edits(twice, edits, stat);
  if (!again) {
    invariant_broken("edits that applied once apply again", again.error().message);
  }
  if (twice != config) {
    invariant_broken(
        "applying edits twice gives the DOM of applying them once",
        "once:  " + gpuctk::oci::dump_config(config) + "\ntwice: " + gpuctk::oci::dump_config(twice));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input =
      gpuctk::fuzz::split_apply_input(std::string_view(reinterpret_cast<const char*>(data), size));
  const auto config = gpuctk::oci::parse_config(input.config);
  if (!config) {
    return 0;
  }
  const auto dumped = gpuctk::oci::dump_config(*config);
  const auto reparsed = gpuctk::oci::parse_config(dumped);
  GPUCTK_FUZZ_CHECK(reparsed.has_value(), dumped);
  GPUCTK_FUZZ_CHECK(gpuctk::oci::dump_config(*reparsed) == dumped, dumped);

  check_request(*config, input.flags);

  const auto format =
      (input.flags & gpuctk::fuzz::k_spec_is_yaml) != 0 ? cdi::Format::yaml : cdi::Format::json;
  const auto spec = cdi::parse_spec(input.spec, format);
  if (!spec) {
    return 0;
  }
  cdi::ContainerEdits all = spec->container_edits;
  for (size_t i = 0; i < spec->devices.size() && i < k_max_devices; ++i) {
    cdi::ContainerEdits one = spec->container_edits;
    cdi::append(one, spec->devices[i].container_edits);
    check_apply(*config, one);
    cdi::append(all, spec->devices[i].container_edits);
  }
  check_apply(*config, all);
  return 0;
}
