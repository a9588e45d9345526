// What a ResourceClaim allocated on this node: the checks on the claim object the kubelet's names must
// match, the node selector, the results of this driver in this node's pool, and hostile claims refused with
// one line.
#include "dra/claims.hpp"

#include <gtest/gtest.h>

#include "claim_fixtures.hpp"
#include "util/strings.hpp"

namespace gpuctk::dra {
namespace {

using namespace test;
using nlohmann::json;

// The error of allocated_devices for `claim`, or "ok".
std::string error_of(const json& claim, const ClaimRef& ref = claim_ref()) {
  auto devices = allocated_devices(claim, ref, k_node, k_driver_name);
  return devices ? "ok" : devices.error().message;
}

TEST(DraClaims, TakesThisDriversResultsInThisNodesPoolInOrder) {
  const auto claim = allocated_claim(
      claim_ref(),
      {result("gpus", "gpu-1"), result("nic", "eth0", "node-1", "rdma.example.com"), result("gpus", "gpu-0"),
       result("big/mig", "gpu-4-mig-1g5gb-0-0"), result("gpus", "gpu-7", "node-2")});
  auto devices = allocated_devices(claim, claim_ref(), k_node, k_driver_name);
  ASSERT_TRUE(devices) << devices.error().message;
  const std::vector<AllocatedDevice> want{
      {"gpus", "node-1", "gpu-1"}, {"gpus", "node-1", "gpu-0"}, {"big/mig", "node-1", "gpu-4-mig-1g5gb-0-0"}};
  EXPECT_EQ(*devices, want);
}

TEST(DraClaims, NoDeviceOfThisDriverHereIsAnError) {
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), {result("nic", "eth0", "node-1", "rdma.example.com")})),
            "no device of driver gpu.nvidia.com in this node's pool");
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), {result("gpus", "gpu-0", "node-2")})),
            "no device of driver gpu.nvidia.com in this node's pool");
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), {})),
            "no device of driver gpu.nvidia.com in this node's pool");
}

TEST(DraClaims, MetadataMustBeWhatTheKubeletNamed) {
  const auto claim = allocated_claim(claim_ref(k_other_uid), {result("gpus", "gpu-0")});
  EXPECT_EQ(error_of(claim),
            "claim uid \"f0e1d2c3-b4a5-4697-8879-6a5b4c3d2e1f\" is not the UID the kubelet "
            "named (\"0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5\"): the claim was deleted and made again");
  ClaimRef other_ns = claim_ref();
  other_ns.namespace_name = "prod";
  EXPECT_EQ(error_of(allocated_claim(other_ns, {result("gpus", "gpu-0")})),
            "claim namespace \"prod\" is not the one the kubelet named (\"default\")");
  EXPECT_EQ(error_of(allocated_claim(claim_ref(k_uid, "other"), {result("gpus", "gpu-0")})),
            "claim name \"other\" is not the one the kubelet named (\"train\")");
  json no_metadata = allocated_claim(claim_ref(), {result("gpus", "gpu-0")});
  no_metadata.erase("metadata");
  EXPECT_EQ(error_of(no_metadata), "metadata: missing");
}

TEST(DraClaims, AnUnallocatedClaimIsRefused) {
  json claim = allocated_claim(claim_ref(), {result("gpus", "gpu-0")});
  claim["status"].erase("allocation");
  EXPECT_EQ(error_of(claim), "not allocated");
  claim["status"]["allocation"] = nullptr;
  EXPECT_EQ(error_of(claim), "not allocated");
  claim.erase("status");
  EXPECT_EQ(error_of(claim), "not allocated");
}

TEST(DraClaims, NodeSelectorOfAnotherNodeIsRefused) {
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), {result("gpus", "gpu-0")}, "node-2")),
            "allocated for another node (its node selector does not select \"node-1\")");
}

TEST(DraClaims, NodeSelectorTermsAreOredAndTheirRequirementsAnded) {
  json claim = allocated_claim(claim_ref(), {result("gpus", "gpu-0")}, "node-2");
  auto& terms = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"];
  // A second term that selects node-1: selected.
  terms.push_back(selector_of(k_node)["nodeSelectorTerms"][0]);
  EXPECT_EQ(error_of(claim), "ok");
  // That term also requiring another field value: no longer selected.
  terms[1]["matchFields"].push_back(
      json{{"key", "metadata.name"}, {"operator", "NotIn"}, {"values", json::array({"node-1"})}});
  EXPECT_EQ(error_of(claim), "allocated for another node (its node selector does not select \"node-1\")");
  // NotIn of other nodes selects this one.
  terms[1]["matchFields"][1]["values"] = json::array({"node-3"});
  EXPECT_EQ(error_of(claim), "ok");
}

TEST(DraClaims, NoOrAnEmptyNodeSelector) {
  json claim = allocated_claim(claim_ref(), {result("gpus", "gpu-0")});
  claim["status"]["allocation"].erase("nodeSelector");
  EXPECT_EQ(error_of(claim), "ok");
  // Kubernetes: no term, or an empty term, selects no node.
  claim["status"]["allocation"]["nodeSelector"] = {{"nodeSelectorTerms", json::array()}};
  EXPECT_EQ(error_of(claim), "allocated for another node (its node selector does not select \"node-1\")");
  claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"].push_back(json::object());
  EXPECT_EQ(error_of(claim), "allocated for another node (its node selector does not select \"node-1\")");
}

TEST(DraClaims, LabelExpressionsCannotBeEvaluated) {
  json claim = allocated_claim(claim_ref(), {result("gpus", "gpu-0")});
  auto& term = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0];
  term.erase("matchFields");
  term["matchExpressions"] =
      json::array({json{{"key", "zone"}, {"operator", "In"}, {"values", json::array({"a"})}}});
  EXPECT_EQ(error_of(claim),
            "node selector: cannot evaluate matchExpressions (node labels) for node \"node-1\"");
  // With a field requirement that already excludes this node, the labels do not matter.
  term["matchFields"] = selector_of("node-2")["nodeSelectorTerms"][0]["matchFields"];
  EXPECT_EQ(error_of(claim), "allocated for another node (its node selector does not select \"node-1\")");
  // Another term that selects this node by name wins.
  claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"].push_back(
      selector_of(k_node)["nodeSelectorTerms"][0]);
  EXPECT_EQ(error_of(claim), "ok");
}

TEST(DraClaims, UnknownFieldsAndOperatorsAreRefused) {
  json claim = allocated_claim(claim_ref(), {result("gpus", "gpu-0")});
  auto& requirement = claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0];
  requirement["operator"] = "Exists";
  EXPECT_EQ(error_of(claim),
            "status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0]: cannot "
            "evaluate the operator \"Exists\" (only In and NotIn)");
  requirement["operator"] = "In";
  requirement["key"] = "spec.nodeName";
  EXPECT_EQ(error_of(claim),
            "status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0]: cannot "
            "evaluate the field \"spec.nodeName\" (only metadata.name)");
}

TEST(DraClaims, MoreResultsThanTheApiAllowsAreRefused) {
  std::vector<json> results(k_max_allocation_results, result("gpus", "gpu-0"));
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), results)), "ok");
  results.push_back(result("gpus", "gpu-1"));
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), results)), "more than 32 allocation results (33)");
}

TEST(DraClaims, MistypedFieldsAreOneLine) {
  json claim = allocated_claim(claim_ref(), {result("gpus", "gpu-0")});
  claim["status"]["allocation"]["devices"]["results"][0]["device"] = 7;
  EXPECT_EQ(error_of(claim), "status.allocation.devices.results[0].device: expected a string");
  claim["status"]["allocation"]["devices"]["results"] = json::array({"gpus"});
  EXPECT_EQ(error_of(claim), "status.allocation.devices.results[0]: expected an object");
  claim["status"]["allocation"]["devices"]["results"] = "gpu-0";
  EXPECT_EQ(error_of(claim), "status.allocation.devices.results: expected a list");
  claim["status"]["allocation"] = json::array();
  EXPECT_EQ(error_of(claim), "status.allocation: expected an object");
  claim["metadata"]["uid"] = json::array();
  EXPECT_EQ(error_of(claim), "metadata.uid: expected a string");
  EXPECT_EQ(error_of(json::array()), "claim: expected an object");
}

TEST(DraClaims, HostileNamesAreRefusedQuoted) {
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), {result("gpus", "../gpu-0\n")})),
            "status.allocation.devices.results[0].device: \"../gpu-0\\n\" is not a DNS label");
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), {result("gpus", "GPU-0")})),
            "status.allocation.devices.results[0].device: \"GPU-0\" is not a DNS label");
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), {result("a/b/c", "gpu-0")})),
            "status.allocation.devices.results[0].request: \"a/b/c\" is not a request name");
  EXPECT_EQ(error_of(allocated_claim(claim_ref(), {result("gpus", std::string(300, 'a'))})),
            "status.allocation.devices.results[0].device: longer than 63 bytes");
  json claim = allocated_claim(claim_ref(), {result("gpus", "gpu-0")});
  claim["metadata"]["uid"] = "\x1b[31m";
  EXPECT_EQ(error_of(claim),
            "claim uid \"\\x1b[31m\" is not the UID the kubelet named "
            "(\"0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5\"): the claim was deleted and made again");
}

TEST(DraClaims, ClaimUids) {
  EXPECT_TRUE(check_claim_uid(k_uid));
  EXPECT_TRUE(check_claim_uid("0C1D2E3F-4A5B-4C6D-8E7F-8091A2B3C4D5"));
  for (const std::string_view bad :
       {"", "../../etc/passwd", "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d",
        "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4d5a", "0c1d2e3f04a5b-4c6d-8e7f-8091a2b3c4d5",
        "0c1d2e3f-4a5b-4c6d-8e7f-8091a2b3c4g5"}) {
    auto checked = check_claim_uid(bad);
    ASSERT_FALSE(checked) << bad;
    EXPECT_EQ(checked.error().message,
              "claim uid " + quote(bad) + " is not a UID (want 8-4-4-4-12 hexadecimal digits)");
  }
}

TEST(DraClaims, ClaimRefs) {
  EXPECT_TRUE(check_claim_ref(claim_ref()));
  EXPECT_EQ(claim_text(claim_ref()), "default/train");
  EXPECT_EQ(error_text(check_claim_ref(ClaimRef{"Default", std::string(k_uid), "train"})),
            "claim namespace \"Default\" is not a DNS label");
  EXPECT_EQ(error_text(check_claim_ref(ClaimRef{"default", std::string(k_uid), "a/b"})),
            "claim name \"a/b\" is not a DNS subdomain");
  EXPECT_EQ(error_text(check_claim_ref(ClaimRef{"default", "x", "train"})),
            "claim uid \"x\" is not a UID (want 8-4-4-4-12 hexadecimal digits)");
}

}  // namespace
}  // namespace gpuctk::dra
