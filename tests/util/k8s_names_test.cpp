#include "util/k8s_names.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gpuctk {
namespace {

TEST(K8sNames, DnsSubdomainIsLowerCaseLabelsBetweenDots) {
  for (const char* good : {"nvidia.com", "a", "0", "a-b.c0", "gpu.intel.com", "x--y"}) {
    EXPECT_TRUE(is_dns_subdomain(good)) << good;
  }
  for (const char* bad : {"", "Nvidia.com", "a..b", "a.", ".a", "-a.b", "a-.b", "a_b", "a/b", "a b"}) {
    EXPECT_FALSE(is_dns_subdomain(bad)) << bad;
  }
  std::string longest;
  while (longest.size() < k_max_dns_subdomain) {
    longest += longest.empty() ? "a" : ".a";
  }
  ASSERT_EQ(longest.size(), 253u);
  EXPECT_TRUE(is_dns_subdomain(longest));
  EXPECT_FALSE(is_dns_subdomain(longest + "a"));
}

}  // namespace
}  // namespace gpuctk
