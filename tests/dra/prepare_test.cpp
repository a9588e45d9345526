// The Preparer as the kubelet drives it, with a fake API server (a ClaimFetch over a map of claims): what
// it answers, what it writes (claim specs, the checkpoint), what it answers again after a restart, and
// that one claim's failure is that claim's alone.
#include "dra/prepare.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <fstream>
#include <map>
#include <thread>

#include "claim_fixtures.hpp"
#include "dra/claim_spec.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::dra {
namespace {

using namespace test;
using gpuctk::test::TempDir;
using nlohmann::json;

// The API server: claims by "namespace/name", and how many times it was asked.
struct FakeApi {
  std::map<std::string, json> claims;
  std::atomic<int> gets{0};

  void put(const ClaimRef& ref, const json& claim) { claims[ref.namespace_name + "/" + ref.name] = claim; }
  [[nodiscard]] ClaimFetch fetch() {
    return [this](const std::string& ns, const std::string& name) -> Result<json> {
      ++gets;
      const auto it = claims.find(ns + "/" + name);
      if (it == claims.end()) {
        return fail("resourceclaims \"" + name + "\" not found");
      }
      return it->second;
    };
  }
};

// The uid "<n>0c1d2e..." for claim number n < 16 of a test.
std::string uid_of(int n) {
  std::string uid(k_uid);
  uid[0] = "0123456789abcdef"[n % 16];
  uid[1] = "0123456789abcdef"[n / 16 % 16];
  return uid;
}

class DraPrepare : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_tmp.path().empty());
    m_config.node_name = k_node;
    m_config.cdi_dir = m_tmp.path() + "/cdi";
    m_config.checkpoint_path = m_tmp.path() + "/checkpoint.json";
  }

  std::unique_ptr<Preparer> open(std::vector<Device> devices = published_devices()) {
    auto preparer = Preparer::open(m_config, node_spec(), std::move(devices));
    EXPECT_TRUE(preparer) << preparer.error().message;
    return preparer ? std::move(*preparer) : nullptr;
  }

  // `ref` allocated `results` on this node, in the fake API server.
  ClaimRef put(const ClaimRef& ref, const std::vector<json>& results) {
    m_api.put(ref, allocated_claim(ref, results));
    return ref;
  }

  [[nodiscard]] std::string spec_path(std::string_view uid) const {
    return claim_spec_path(m_config.cdi_dir, uid);
  }
  [[nodiscard]] bool spec_there(std::string_view uid) const {
    return claim_spec_exists(m_config.cdi_dir, uid);
  }
  [[nodiscard]] Checkpoint on_disk() const {
    auto read = read_checkpoint(m_config.checkpoint_path);
    EXPECT_TRUE(read) << read.error().message;
    return read.value_or(Checkpoint{});
  }

  TempDir m_tmp{"gpuctk-dra"};
  PreparerConfig m_config;
  FakeApi m_api;
};

PreparedDevice prepared(std::vector<std::string> requests, std::string device, std::string_view uid = k_uid) {
  return PreparedDevice{std::move(requests), std::string(k_node), device, {claim_cdi_id(uid, device)}};
}

TEST_F(DraPrepare, PreparesWritesTheSpecAndTheCheckpoint) {
  auto preparer = open();
  ASSERT_TRUE(preparer);
  const auto ref = put(claim_ref(), {result("gpus", "gpu-1"), result("gpus", "gpu-0"),
                                     result("nic", "eth0", "node-1", "rdma.example.com")});
  const auto answers = preparer->prepare({ref}, m_api.fetch());
  const std::map<std::string, PrepareResult> want{
      {std::string(k_uid), PrepareResult{{prepared({"gpus"}, "gpu-1"), prepared({"gpus"}, "gpu-0")}, ""}}};
  EXPECT_EQ(answers, want);
  EXPECT_TRUE(spec_there(k_uid));
  EXPECT_EQ(on_disk().claims.at(std::string(k_uid)),
            (PreparedClaim{"default", "train", want.at(std::string(k_uid)).devices}));
  EXPECT_EQ(preparer->prepared(), std::vector<ClaimRef>{ref});
}

TEST_F(DraPrepare, ADeviceOfTwoRequestsIsOneAnswer) {
  auto preparer = open();
  ASSERT_TRUE(preparer);
  const auto ref = put(claim_ref(), {result("a", "gpu-2"), result("b/mig", "gpu-2")});
  const auto answers = preparer->prepare({ref}, m_api.fetch());
  EXPECT_EQ(answers.at(std::string(k_uid)), (PrepareResult{{prepared({"a", "b/mig"}, "gpu-2")}, ""}));
}

TEST_F(DraPrepare, PreparingTwiceAnswersTheSameWithoutAsking) {
  auto preparer = open();
  ASSERT_TRUE(preparer);
  const auto ref = put(claim_ref(), {result("gpus", "gpu-3")});
  const auto first = preparer->prepare({ref}, m_api.fetch());
  ASSERT_EQ(first.at(std::string(k_uid)).error, "");
  const std::string spec = read_file(spec_path(k_uid)).value_or("");
  EXPECT_EQ(preparer->prepare({ref}, m_api.fetch()), first);
  EXPECT_EQ(m_api.gets, 1);
  // The spec file gone (a reboot cleared /var/run/cdi): written again, the same.
  ASSERT_TRUE(remove_claim_spec(m_config.cdi_dir, k_uid));
  EXPECT_EQ(preparer->prepare({ref}, m_api.fetch()), first);
  EXPECT_EQ(m_api.gets, 1);
  EXPECT_EQ(read_file(spec_path(k_uid)).value_or("missing"), spec);
}

TEST_F(DraPrepare, UnprepareRemovesTheSpecThenTheEntry) {
  auto preparer = open();
  ASSERT_TRUE(preparer);
  const auto ref = put(claim_ref(), {result("gpus", "gpu-0")});
  const auto other = put(claim_ref(k_other_uid, "other"), {result("gpus", "gpu-1")});
  preparer->prepare({ref, other}, m_api.fetch());
  ASSERT_TRUE(spec_there(k_uid));
  const std::map<std::string, std::string> ok{{std::string(k_uid), ""}};
  EXPECT_EQ(preparer->unprepare({ref}), ok);
  EXPECT_FALSE(spec_there(k_uid));
  EXPECT_TRUE(spec_there(k_other_uid));
  EXPECT_EQ(preparer->prepared(), std::vector<ClaimRef>{other});
  EXPECT_EQ(on_disk().claims.size(), 1U);
  EXPECT_TRUE(on_disk().claims.contains(std::string(k_other_uid)));
  // Again: already unprepared.
  EXPECT_EQ(preparer->unprepare({ref}), ok);
}

TEST_F(DraPrepare, UnpreparingAnUnknownClaimSucceedsAndRemovesALeftoverSpec) {
  auto preparer = open();
  ASSERT_TRUE(preparer);
  // A spec left by a plugin that died between the spec and the checkpoint.
  const std::array devices{device("gpu-0", "0")};
  ASSERT_TRUE(write_claim_spec(m_config.cdi_dir, k_uid, node_spec(), devices));
  EXPECT_EQ(preparer->unprepare({claim_ref()}),
            (std::map<std::string, std::string>{{std::string(k_uid), ""}}));
  EXPECT_FALSE(spec_there(k_uid));
  EXPECT_EQ(preparer->unprepare({claim_ref(k_other_uid)}),
            (std::map<std::string, std::string>{{std::string(k_other_uid), ""}}));
  EXPECT_FALSE(std::ifstream(m_config.checkpoint_path).good());  // nothing to record
}

TEST_F(DraPrepare, ARestartedPreparerAnswersTheSameAndUnprepares) {
  const auto ref = put(claim_ref(), {result("gpus", "gpu-0"), result("mig", "gpu-4-mig-1g5gb-0-0")});
  std::map<std::string, PrepareResult> first;
  {
    auto preparer = open();
    ASSERT_TRUE(preparer);
    first = preparer->prepare({ref}, m_api.fetch());
    ASSERT_EQ(first.at(std::string(k_uid)).error, "");
  }
  m_api.claims.clear();  // the API server is not asked again
  auto restarted = open();
  ASSERT_TRUE(restarted);
  EXPECT_EQ(restarted->prepared(), std::vector<ClaimRef>{ref});
  EXPECT_EQ(restarted->prepare({ref}, m_api.fetch()), first);
  EXPECT_EQ(m_api.gets, 1);
  EXPECT_EQ(restarted->unprepare({ref}), (std::map<std::string, std::string>{{std::string(k_uid), ""}}));
  EXPECT_FALSE(spec_there(k_uid));
  EXPECT_TRUE(on_disk().claims.empty());
  auto again = open();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->prepared().empty());
}

TEST_F(DraPrepare, ClaimsThatAreNotThisNodesToPrepareFailAlone) {
  auto preparer = open();
  ASSERT_TRUE(preparer);
  const auto good = put(claim_ref(uid_of(1), "good"), {result("gpus", "gpu-0")});
  const auto elsewhere = claim_ref(uid_of(2), "elsewhere");
  m_api.put(elsewhere, allocated_claim(elsewhere, {result("gpus", "gpu-0", "node-2")}, "node-2"));
  const auto other_driver =
      put(claim_ref(uid_of(3), "nic"), {result("nic", "eth0", "node-1", "rdma.example.com")});
  const auto recreated = claim_ref(uid_of(4), "recreated");
  m_api.put(recreated, allocated_claim(claim_ref(uid_of(5), "recreated"), {result("gpus", "gpu-1")}));
  const auto vanished =
      put(claim_ref(uid_of(6), "vanished"), {result("gpus", "gpu-1"), result("gpus", "gpu-7")});
  const auto missing = claim_ref(uid_of(7), "missing");

  const auto answers =
      preparer->prepare({good, elsewhere, other_driver, recreated, vanished, missing}, m_api.fetch());
  ASSERT_EQ(answers.size(), 6U);
  EXPECT_EQ(answers.at(good.uid), (PrepareResult{{prepared({"gpus"}, "gpu-0", good.uid)}, ""}));
  EXPECT_EQ(
      answers.at(elsewhere.uid).error,
      "claim default/elsewhere: allocated for another node (its node selector does not select \"node-1\")");
  EXPECT_EQ(answers.at(other_driver.uid).error,
            "claim default/nic: no device of driver gpu.nvidia.com in this node's pool");
  EXPECT_EQ(answers.at(recreated.uid).error, "claim default/recreated: claim uid \"" + uid_of(5) +
                                                 "\" is not the UID the kubelet named (\"" + uid_of(4) +
                                                 "\"): the claim was deleted and made again");
  EXPECT_EQ(answers.at(vanished.uid).error, "device gpu-7 of claim default/vanished is not on this node");
  EXPECT_EQ(answers.at(missing.uid).error, "claim default/missing: resourceclaims \"missing\" not found");
  for (const auto& [uid, answer] : answers) {
    EXPECT_EQ(answer.devices.empty(), !answer.error.empty()) << uid;
    EXPECT_EQ(spec_there(uid), uid == good.uid) << uid;
  }
  EXPECT_EQ(preparer->prepared(), std::vector<ClaimRef>{good});
  EXPECT_EQ(on_disk().claims.size(), 1U);
}

TEST_F(DraPrepare, ADeviceGoneAfterARediscoveryIsNotPrepared) {
  auto preparer = open();
  ASSERT_TRUE(preparer);
  const auto before = put(claim_ref(uid_of(1), "before"), {result("gpus", "gpu-3")});
  ASSERT_EQ(preparer->prepare({before}, m_api.fetch()).at(before.uid).error, "");
  // A MIG change: gpu-3 is no longer published.
  preparer->set_inventory(node_spec(), {device("gpu-0", "0"), device("gpu-1", "1")});
  const auto after = put(claim_ref(uid_of(2), "after"), {result("gpus", "gpu-3")});
  EXPECT_EQ(preparer->prepare({after}, m_api.fetch()).at(after.uid).error,
            "device gpu-3 of claim default/after is not on this node");
  // The claim prepared before keeps its answer.
  EXPECT_EQ(preparer->prepare({before}, m_api.fetch()).at(before.uid),
            (PrepareResult{{prepared({"gpus"}, "gpu-3", before.uid)}, ""}));
}

TEST_F(DraPrepare, ACheckpointThatCannotBeWrittenLeavesNoSpec) {
  m_config.checkpoint_path = m_tmp.path() + "/missing/checkpoint.json";
  auto preparer = open();
  ASSERT_TRUE(preparer);
  const auto ref = put(claim_ref(), {result("gpus", "gpu-0")});
  const auto answer = preparer->prepare({ref}, m_api.fetch()).at(std::string(k_uid));
  EXPECT_TRUE(answer.error.starts_with("claim default/train: write " + m_config.checkpoint_path + ": "))
      << answer.error;
  EXPECT_FALSE(spec_there(k_uid));
  EXPECT_TRUE(preparer->prepared().empty());
}

TEST_F(DraPrepare, ACorruptCheckpointIsRefused) {
  ASSERT_TRUE(write_file_atomic(m_config.checkpoint_path, "{\"version\": 1, \"claims\": {", 0600));
  auto preparer = Preparer::open(m_config, node_spec(), published_devices());
  ASSERT_FALSE(preparer);
  EXPECT_TRUE(preparer.error().message.starts_with(m_config.checkpoint_path + ": not JSON: parse error"))
      << preparer.error().message;
  auto text = encode_checkpoint(Checkpoint{{{std::string(k_uid), PreparedClaim{"default", "train", {}}}}});
  text.replace(text.find("train"), 5, "tRain");
  ASSERT_TRUE(write_file_atomic(m_config.checkpoint_path, text, 0600));
  preparer = Preparer::open(m_config, node_spec(), published_devices());
  ASSERT_FALSE(preparer);
  EXPECT_EQ(preparer.error().message,
            m_config.checkpoint_path + ": checksum mismatch (the file was changed or cut short)");
}

TEST_F(DraPrepare, BadConfigAndBadReferencesAreRefused) {
  PreparerConfig config = m_config;
  config.node_name = "";
  EXPECT_EQ(error_text(Preparer::open(config, node_spec(), {})), "node name \"\" is not a DNS subdomain");
  config = m_config;
  config.cdi_dir = "cdi";
  EXPECT_EQ(error_text(Preparer::open(config, node_spec(), {})), "cdi dir \"cdi\" is not an absolute path");
  auto preparer = open();
  ASSERT_TRUE(preparer);
  const ClaimRef bad{"default", "../../x", "train"};
  const std::string why = "claim uid \"../../x\" is not a UID (want 8-4-4-4-12 hexadecimal digits)";
  EXPECT_EQ(preparer->prepare({bad}, m_api.fetch()).at(bad.uid).error, why);
  EXPECT_EQ(preparer->unprepare({bad}).at(bad.uid), why);
  EXPECT_EQ(m_api.gets, 0);
}

TEST_F(DraPrepare, ConcurrentPreparesOfDifferentClaimsAllLand) {
  auto preparer = open();
  ASSERT_TRUE(preparer);
  std::vector<ClaimRef> refs;
  for (int i = 0; i < 32; ++i) {
    refs.push_back(put(claim_ref(uid_of(i), "claim-" + std::to_string(i)),
                       {result("gpus", "gpu-" + std::to_string(i % 4))}));
  }
  const auto fetch = m_api.fetch();
  std::array<std::map<std::string, PrepareResult>, 2> halves;
  std::thread other([&] { halves[1] = preparer->prepare({refs.begin() + 16, refs.end()}, fetch); });
  halves[0] = preparer->prepare({refs.begin(), refs.begin() + 16}, fetch);
  other.join();
  for (int i = 0; i < 32; ++i) {
    const auto& answer = halves[static_cast<size_t>(i / 16)].at(refs[static_cast<size_t>(i)].uid);
    EXPECT_EQ(
        answer,
        (PrepareResult{{prepared({"gpus"}, "gpu-" + std::to_string(i % 4), refs[static_cast<size_t>(i)].uid)},
                       ""}));
    EXPECT_TRUE(spec_there(refs[static_cast<size_t>(i)].uid));
  }
  EXPECT_EQ(on_disk().claims.size(), 32U);
  EXPECT_EQ(preparer->prepared().size(), 32U);
}

}  // namespace
}  // namespace gpuctk::dra
