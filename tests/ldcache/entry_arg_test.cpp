// The `--ld-cache-entry` value (ldcache/entry_arg.hpp): written as cdi generate writes it, parsed strictly as
// the hook parses it.
#include "ldcache/entry_arg.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuctk::ldcache {
namespace {

TEST(LdCacheEntryArg, WrittenInHexAndParsedBack) {
  const auto arg = entry_arg(0x303, 0, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(arg, "0x303:0x0:libcuda.so.1:/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  auto fact = parse_entry_arg(arg);
  ASSERT_TRUE(fact) << fact.error().message;
  EXPECT_EQ(*fact, (LdCacheFact{"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x303, 0}));
  EXPECT_EQ(entry_arg(0xffffffffu, 0x30200, "a", "/a"), "0xffffffff:0x30200:a:/a");
}

TEST(LdCacheEntryArg, ThePathIsEverythingAfterTheThirdColon) {
  auto fact = parse_entry_arg("0x1:0x0:a.so:/p:q");
  ASSERT_TRUE(fact) << fact.error().message;
  EXPECT_EQ(fact->soname, "a.so");
  EXPECT_EQ(fact->path, "/p:q");
}

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
  EXPECT_EQ(parse_ld_cache_facts(std::vector<std::string>(k_max_facts + 1, "3:0:a:/a")).error().message,
            "--ld-cache-entry: more than 8192 values");
}

}  // namespace
}  // namespace gpuctk::ldcache
