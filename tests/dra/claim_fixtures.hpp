#pragma once
// What the tests of claims, claim specs and the Preparer share: a real node spec (the golden spec gpuctk
// builds for the dgx-a100 fixture host), devices published from it by hand, and ResourceClaim objects as
// the API server returns them.

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cdi/codec.hpp"
#include "dra/claims.hpp"
#include "dra/devices.hpp"
#include "support/golden_file.hpp"
#include "util/file.hpp"

namespace gpuctk::dra::test {

inline constexpr std::string_view k_node = "node-1";
inline constexpr std::string_view k_uid = "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5";
inline constexpr std::string_view k_other_uid = "f0e1d2c3-b4a5-4697-8879-6a5b4c3d2e1f";

// The error of `result`, or "ok": a test expecting an error must not read error() of a success.
template <class T>
std::string error_text(const Result<T>& result) {
  return result ? "ok" : result.error().message;
}

// gpuctk's node spec of the dgx-a100 fixture host (GPUs "0" to "7", MIG devices "4:0", ...), its fixture
// root replaced by /host.
inline cdi::Spec node_spec() {
  auto text = read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/golden/dgx-a100.nvml.yaml");
  EXPECT_TRUE(text) << text.error().message;
  auto spec =
      cdi::parse_spec(gpuctk::test::replace_all(text.value_or(""), "@ROOT@", "/host"), cdi::Format::yaml);
  EXPECT_TRUE(spec) << spec.error().message;
  return spec.value_or(cdi::Spec{});
}

// A published device as devices_of names it: `name` is the DRA name, `cdi_name` the node spec's.
inline Device device(std::string name, std::string cdi_name) {
  Device d;
  d.name = std::move(name);
  d.cdi_name = std::move(cdi_name);
  return d;
}

// GPUs 0 to 3 and the MIG device 4:0.
inline std::vector<Device> published_devices() {
  return {device("gpu-0", "0"), device("gpu-1", "1"), device("gpu-2", "2"), device("gpu-3", "3"),
          device("gpu-4-mig-1g5gb-0-0", "4:0")};
}

inline ClaimRef claim_ref(std::string_view uid = k_uid, std::string name = "train") {
  return ClaimRef{"default", std::string(uid), std::move(name)};
}

// One allocation result.
inline nlohmann::json result(std::string_view request, std::string_view device,
                             std::string_view pool = k_node, std::string_view driver = k_driver_name) {
  nlohmann::json r = nlohmann::json::object();
  r["request"] = request;
  r["driver"] = driver;
  r["pool"] = pool;
  r["device"] = device;
  return r;
}

// The node selector the scheduler writes for devices of `node`'s pool.
inline nlohmann::json selector_of(std::string_view node) {
  nlohmann::json requirement = nlohmann::json::object();
  requirement["key"] = "metadata.name";
  requirement["operator"] = "In";
  requirement["values"] = nlohmann::json::array({node});
  nlohmann::json term = nlohmann::json::object();
  term["matchFields"] = nlohmann::json::array({requirement});
  nlohmann::json selector = nlohmann::json::object();
  selector["nodeSelectorTerms"] = nlohmann::json::array({term});
  return selector;
}

// The ResourceClaim `ref` allocated `results` on `node`, as `kubectl get -o json` shows it.
inline nlohmann::json allocated_claim(const ClaimRef& ref, const std::vector<nlohmann::json>& results,
                                      std::string_view node = k_node) {
  nlohmann::json claim = nlohmann::json::object();
  claim["apiVersion"] = "resource.k8s.io/v1";
  claim["kind"] = "ResourceClaim";
  claim["metadata"] = {{"namespace", ref.namespace_name}, {"name", ref.name}, {"uid", ref.uid}};
  claim["spec"]["devices"]["requests"] = nlohmann::json::array();
  claim["status"]["allocation"]["devices"]["results"] = results;
  claim["status"]["allocation"]["nodeSelector"] = selector_of(node);
  return claim;
}

}  // namespace gpuctk::dra::test
