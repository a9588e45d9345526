// The --ld-cache-entry values update-ldcache takes (hook/ld_cache_merge.hpp).

#include "hook/ld_cache_merge.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hook/container_hooks.hpp"

namespace gpuctk::hook {
namespace {

TEST(LdCacheFacts, ParsedAndBounded) {
  auto facts = parse_ld_cache_facts({"0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                     "3:0:libcuda.so.1:/usr/lib/i386-linux-gnu/libcuda.so.1",
                                     "0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1"});
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(*facts, (std::vector<LdCacheFact>{
                        {"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x303, 0},
                        {"libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1", 3, 0},
                    }));
  const auto error = [](const std::string& value) {
    auto r = parse_ld_cache_facts({value});
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(error("0x303:libcuda.so.1"),
            "--ld-cache-entry \"0x303:libcuda.so.1\": expected FLAGS:OSVERSION:SONAME:PATH");
  EXPECT_EQ(error("0x1ffffffff:0:a:/a"),
            "--ld-cache-entry \"0x1ffffffff:0:a:/a\": FLAGS \"0x1ffffffff\" is not a 32-bit hex number");
  EXPECT_EQ(error("0x303:zz:a:/a"),
            "--ld-cache-entry \"0x303:zz:a:/a\": OSVERSION \"zz\" is not a 32-bit hex number");
  EXPECT_EQ(error("0x303:0:a/b:/a"),
            "--ld-cache-entry \"0x303:0:a/b:/a\": SONAME \"a/b\" is not a file name");
  EXPECT_EQ(error("0x303:0::/a"), "--ld-cache-entry \"0x303:0::/a\": SONAME \"\" is not a file name");
  EXPECT_EQ(error("0x303:0:a:relative"),
            "--ld-cache-entry \"0x303:0:a:relative\": \"relative\": not an absolute path");
  EXPECT_EQ(error("0x303:0:a:/x/../y"),
            "--ld-cache-entry \"0x303:0:a:/x/../y\": \"/x/../y\": \".\" and \"..\" are not "
            "allowed in a container path");
  EXPECT_EQ(error("0x303:0:a:/" + std::string(5000, 'x')).find("PATH is longer than 4096 bytes") ==
                std::string::npos,
            false);
  EXPECT_EQ(parse_ld_cache_facts(std::vector<std::string>(k_max_hook_args + 1, "3:0:a:/a")).error().message,
            "--ld-cache-entry: more than 8192 values");
}

}  // namespace
}  // namespace gpuctk::hook
