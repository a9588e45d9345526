// GetPreferredAllocation against a table of topologies, each with the choice NVIDIA's allocator makes for
// the same input (go-gpuallocator's best-effort policy for whole GPUs, the device plugin's greedy
// distributed and packed policies for replicas), worked out by hand from its algorithm.
#include "plugin/preferred.hpp"

#include <gtest/gtest.h>

#include "test_host.hpp"

namespace gpuctk::plugin {
namespace {

using discover::GpuLink;
using discover::PciePath;

// A symmetric link table of n GPUs: every pair `base`, then the listed pairs.
struct Pair {
  uint32_t a, b;
  GpuLink link;
};
Links table(uint32_t n, GpuLink base, std::initializer_list<Pair> pairs) {
  Links links(n, std::vector<GpuLink>(n, base));
  for (uint32_t i = 0; i < n; ++i) {
    links[i][i] = {};
  }
  for (const auto& p : pairs) {
    links[p.a][p.b] = p.link;
    links[p.b][p.a] = p.link;
  }
  return links;
}

Resource gpus(uint32_t n) {
  std::vector<std::string> warnings;
  auto resources = build_resources(test::whole_gpus(n), Config{}, {}, warnings);
  return resources.value().front();
}

std::string id(uint32_t gpu) {
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%08u-0000-4000-8000-000000000000", gpu);
  return text;
}

std::vector<std::string> ids(std::initializer_list<uint32_t> indexes) {
  std::vector<std::string> out;
  for (const auto i : indexes) {
    out.push_back(id(i));
  }
  return out;
}

std::vector<std::string> prefer(const Resource& resource, const Links& links,
                                std::vector<std::string> available, std::vector<std::string> required,
                                int size, AllocationPolicy policy = AllocationPolicy::distributed) {
  auto out = preferred_allocation(resource, links, policy, available, required, size);
  EXPECT_TRUE(out) << out.error().message;
  return out.value_or(std::vector<std::string>{"error"});
}

TEST(PluginPreferred, PairScoresAreNvidiasAllocators) {
  EXPECT_EQ(link_score({PciePath::unknown, 0}), 0);
  EXPECT_EQ(link_score({PciePath::cross_cpu, 0}), 10);
  EXPECT_EQ(link_score({PciePath::same_cpu, 0}), 20);
  EXPECT_EQ(link_score({PciePath::host_bridge, 0}), 30);
  EXPECT_EQ(link_score({PciePath::multi_switch, 0}), 40);
  EXPECT_EQ(link_score({PciePath::single_switch, 2}), 250);
  EXPECT_EQ(link_score({PciePath::same_board, 0}), 60);
  EXPECT_EQ(link_score({PciePath::same_cpu, 12}), 1220);
  EXPECT_EQ(link_score({PciePath::unknown, 24}), 1800);  // the allocator counts eighteen links at most
}

TEST(PluginPreferred, WholeGpusFollowTheBestEffortPolicyOfNvidiasAllocator) {
  // Two NVLinked pairs on their own switches, the pairs on different NUMA nodes.
  const Links pairs = table(4, {PciePath::cross_cpu, 0},
                            {{0, 1, {PciePath::single_switch, 2}}, {2, 3, {PciePath::single_switch, 2}}});
  // A ring: 0-1 one link, 1-2 two, 2-3 one, 3-0 two, one NUMA node.
  const Links ring = table(4, {PciePath::same_cpu, 0},
                           {{0, 1, {PciePath::same_cpu, 1}},
                            {1, 2, {PciePath::same_cpu, 2}},
                            {2, 3, {PciePath::same_cpu, 1}},
                            {3, 0, {PciePath::same_cpu, 2}}});
  // The best pair (0-1) is not in the best partition ({0,2} and {1,3}): the partition wins.
  const Links partition = table(
      4, {PciePath::unknown, 0},
      {{0, 1, {PciePath::unknown, 3}}, {0, 2, {PciePath::cross_cpu, 2}}, {1, 3, {PciePath::cross_cpu, 2}}});
  // Eight GPUs on two NUMA nodes, pairs of them on a switch, each node's two pairs on one host bridge.
  Links pcie = table(8, {PciePath::cross_cpu, 0},
                     {{0, 1, {PciePath::single_switch, 0}},
                      {2, 3, {PciePath::single_switch, 0}},
                      {4, 5, {PciePath::single_switch, 0}},
                      {6, 7, {PciePath::single_switch, 0}}});
  for (const auto& [a, b] : {std::pair{0, 2}, {0, 3}, {1, 2}, {1, 3}, {4, 6}, {4, 7}, {5, 6}, {5, 7}}) {
    pcie[a][b] = pcie[b][a] = {PciePath::host_bridge, 0};
  }
  const Resource four = gpus(4);
  const Resource eight = gpus(8);
  const struct {
    const char* what;
    const Resource& resource;
    const Links& links;
    std::vector<std::string> available, required;
    int size;
    std::vector<std::string> nvidia;  // NVIDIA's choice
  } cases[] = {
      {"NVLinked pair first", four, pairs, ids({0, 1, 2, 3}), {}, 2, ids({0, 1})},
      {"the remaining NVLinked pair", four, pairs, ids({0, 2, 3}), {}, 2, ids({2, 3})},
      {"required GPU's best partner", four, pairs, ids({0, 2, 3}), ids({0}), 2, ids({0, 2})},
      {"one GPU: the first available", four, pairs, ids({2, 0, 3}), {}, 1, ids({2})},
      {"one GPU: the required one", four, pairs, ids({0, 1, 3}), ids({3}), 1, ids({3})},
      {"ring: the two-link pairs", four, ring, ids({0, 1, 2, 3}), {}, 2, ids({0, 3})},
      {"ring: all four", four, ring, ids({3, 2, 1, 0}), {}, 4, ids({3, 2, 1, 0})},
      {"best partition over best pair", four, partition, ids({0, 1, 2, 3}), {}, 2, ids({0, 2})},
      {"a NUMA node's four", eight, pcie, ids({0, 1, 2, 3, 4, 5, 6, 7}), {}, 4, ids({0, 1, 2, 3})},
      {"a host bridge's pair over a cross-node one", eight, pcie, ids({1, 2, 5, 6}), {}, 2, ids({1, 2})},
      {"the switch partner of a required GPU", eight, pcie, ids({0, 1, 2, 3, 4, 5, 6, 7}), ids({5}), 2,
       ids({4, 5})},
      {"no links known: the first ones", eight, Links{}, ids({7, 6, 5, 4}), {}, 2, ids({7, 6})},
      {"more than available: nothing", four, pairs, ids({0, 1}), {}, 3, {}},
      {"more required than the size: nothing", four, pairs, ids({0, 1, 2}), ids({0, 1}), 1, {}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(prefer(c.resource, c.links, c.available, c.required, c.size), c.nvidia) << c.what;
  }
}

TEST(PluginPreferred, PaddingIsNeverAnswered) {
  // Three GPUs, sets of two: the best partition is {0,1} {2,padding}. With 2 required, a partition needs
  // a full set holding it: {0,2} {1,padding} comes first of the two that have one.
  const Links links = table(3, {PciePath::cross_cpu, 0}, {{0, 1, {PciePath::cross_cpu, 3}}});
  const Resource three = gpus(3);
  EXPECT_EQ(prefer(three, links, ids({0, 1, 2}), {}, 2), ids({0, 1}));
  EXPECT_EQ(prefer(three, links, ids({0, 1, 2}), ids({2}), 2), ids({0, 2}));
  // Five GPUs in sets of three: the best partition is {0, 1, padding} (1800) {2, 3, 4} (1500), whose best
  // set holds the padding: NVIDIA's would answer it (and fail on it); gpuctk answers its GPUs.
  const Links five = table(5, {PciePath::unknown, 0},
                           {{0, 1, {PciePath::unknown, 18}},
                            {2, 3, {PciePath::unknown, 5}},
                            {3, 4, {PciePath::unknown, 5}},
                            {2, 4, {PciePath::unknown, 5}}});
  EXPECT_EQ(prefer(gpus(5), five, ids({0, 1, 2, 3, 4}), {}, 3), ids({0, 1}));
}

TEST(PluginPreferred, ReplicasSpreadAcrossGpusDistributedAndFillThemPacked) {
  Config config;
  config.sharing = labels::SharingStrategy::time_slicing;
  config.replicated = {{"nvidia.com/gpu", 2, false}};
  std::vector<std::string> warnings;
  const Resource shared = build_resources(test::whole_gpus(3), config, {}, warnings).value().front();
  const auto r = [](uint32_t gpu, int n) { return id(gpu) + "::" + std::to_string(n); };
  const std::vector<std::string> all = {r(0, 0), r(0, 1), r(1, 0), r(1, 1), r(2, 0), r(2, 1)};
  EXPECT_EQ(prefer(shared, {}, all, {}, 3), (std::vector<std::string>{r(0, 0), r(1, 0), r(2, 0)}));
  // GPU 0 has one replica taken: the others' first replicas come first, then GPU 0's (picked from least
  // in this answer), then a second one.
  EXPECT_EQ(prefer(shared, {}, {r(0, 1), r(1, 0), r(1, 1), r(2, 0), r(2, 1)}, {}, 2),
            (std::vector<std::string>{r(1, 0), r(2, 0)}));
  EXPECT_EQ(prefer(shared, {}, {r(0, 1), r(1, 0), r(1, 1), r(2, 0), r(2, 1)}, {}, 4),
            (std::vector<std::string>{r(1, 0), r(2, 0), r(0, 1), r(2, 1)}));
  EXPECT_EQ(prefer(shared, {}, all, {r(2, 1)}, 2), (std::vector<std::string>{r(2, 1), r(0, 0)}));
  EXPECT_EQ(prefer(shared, {}, all, {}, 3, AllocationPolicy::packed),
            (std::vector<std::string>{r(0, 0), r(0, 1), r(1, 0)}));
  EXPECT_EQ(prefer(shared, {}, {r(2, 1), r(0, 0), r(0, 1), r(2, 0)}, {}, 2, AllocationPolicy::packed),
            (std::vector<std::string>{r(2, 1), r(2, 0)}));
}

TEST(PluginPreferred, MigDevicesAreGreedyAndRefusalsAreNvidias) {
  Config config;
  config.mig_strategy = labels::MigStrategy::mixed;
  std::vector<std::string> warnings;
  const auto resources = build_resources(test::two_gpus(), config, {}, warnings).value();
  const Resource& mig = resources.back();
  ASSERT_EQ(mig.name, "nvidia.com/mig-3g.20gb");
  EXPECT_EQ(prefer(mig, {}, {test::k_mig11, test::k_mig10}, {}, 1), std::vector<std::string>{test::k_mig11});
  auto short_of =
      preferred_allocation(mig, {}, AllocationPolicy::distributed, std::vector<std::string>{test::k_mig10},
                           std::vector<std::string>{}, 2);
  ASSERT_FALSE(short_of);
  EXPECT_EQ(short_of.error().message, "not enough available devices to satisfy allocation");
  auto unknown = preferred_allocation(mig, {}, AllocationPolicy::distributed,
                                      std::vector<std::string>{test::k_gpu0}, std::vector<std::string>{}, 1);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "unknown device: \"GPU-00000000-0000-4000-8000-000000000000\"");
}

}  // namespace
}  // namespace gpuctk::plugin
