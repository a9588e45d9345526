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
  EXPECT_EQ(parent_path("/etc/cdi/nvidia.yaml"), "/etc/cdi");
  EXPECT_EQ(parent_path("/etc"), "/");
  EXPECT_EQ(parent_path("/"), "/");
  EXPECT_EQ(parent_path("cdi/nvidia.yaml"), "cdi");
  EXPECT_EQ(parent_path("nvidia.yaml"), ".");
  EXPECT_EQ(parent_path(""), ".");
}

}  // namespace
}  // namespace gpuctk
