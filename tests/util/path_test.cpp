// util/path: lexical path helpers (no filesystem access).

#include "util/path.hpp"

#include <gtest/gtest.h>

namespace gpuctk {
namespace {

TEST(Path, CleanPathIsLexical) {
  EXPECT_EQ(clean_path("/usr//lib/./x86_64-linux-gnu/../lib64/"), "/usr/lib/lib64");
  EXPECT_EQ(clean_path("/"), "/");
  EXPECT_EQ(clean_path("/.."), "/");
  EXPECT_TRUE(is_clean_path("/usr/lib"));
  EXPECT_FALSE(is_clean_path("/usr/lib/"));
  EXPECT_FALSE(is_clean_path("usr/lib"));
  EXPECT_EQ(clean_absolute_path("../lib", "/usr/bin"), "/usr/lib");
  EXPECT_EQ(clean_absolute_path("/etc/x", "/usr/bin"), "/etc/x");
}

TEST(Path, ParentPathOfAbsoluteAndRelativePaths) {
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"/etc/cdi/nvidia.yaml", "/etc/cdi"},
           {"/etc", "/"},
           {"/", "/"},
           {"cdi/nvidia.yaml", "cdi"},
           {"nvidia.yaml", "."},
           {"", "."},
       }) {
    EXPECT_EQ(parent_path(in), want) << in;
  }
}

}  // namespace
}  // namespace gpuctk
