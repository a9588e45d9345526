// tests/support/golden_file.hpp: a golden file that differs fails the test, also when GPUCTK_UPDATE_GOLDEN=1
// rewrites it (a run that changed a golden file is never green).

#include "support/golden_file.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::test {
namespace {

// Sets or clears GPUCTK_UPDATE_GOLDEN for one scope.
class UpdateGolden {
 public:
  explicit UpdateGolden(const char* value) {
    if (value != nullptr) {
      ::setenv("GPUCTK_UPDATE_GOLDEN", value, 1);
    } else {
      ::unsetenv("GPUCTK_UPDATE_GOLDEN");
    }
  }
  UpdateGolden(const UpdateGolden&) = delete;
  UpdateGolden& operator=(const UpdateGolden&) = delete;
  ~UpdateGolden() { ::unsetenv("GPUCTK_UPDATE_GOLDEN"); }
};

TEST(GoldenFile, ADifferenceFailsAndNamesTheFirstDifferingLine) {
  const UpdateGolden update(nullptr);
  const TempDir dir;
  const std::string golden = dir.write("spec.yaml", "a: 1\nb: 2\n");
  EXPECT_TRUE(matches_golden_file(golden, "a: 1\nb: 2\n"));
  const auto differs = matches_golden_file(golden, "a: 1\nb: 3\n");
  EXPECT_FALSE(differs);
  EXPECT_EQ(std::string(differs.message()), "differs from " + golden +
                                                " at line 2, column 4:\n  golden: b: 2\n  actual: b: 3\n"
                                                "(GPUCTK_UPDATE_GOLDEN=1 rewrites it; read the diff)");
  EXPECT_EQ(read_file(golden).value_or(""), "a: 1\nb: 2\n");  // never rewritten without the variable
}

TEST(GoldenFile, UpdatingRewritesTheFileAndStillFails) {
  const UpdateGolden update("1");
  const TempDir dir;
  const std::string golden = dir.write("spec.yaml", "a: 1\n");
  const auto rewritten = matches_golden_file(golden, "a: 2\n");
  EXPECT_FALSE(rewritten);
  EXPECT_EQ(std::string(rewritten.message()),
            "rewrote " + golden + ": read its diff, then run again without GPUCTK_UPDATE_GOLDEN");
  EXPECT_EQ(read_file(golden).value_or(""), "a: 2\n");
  // A missing golden file is written, and fails the same way; an equal one passes untouched.
  const auto created = matches_golden_file(dir.path() + "/new/spec.json", "{}\n");
  EXPECT_FALSE(created);
  EXPECT_EQ(read_file(dir.path() + "/new/spec.json").value_or(""), "{}\n");
  EXPECT_TRUE(matches_golden_file(golden, "a: 2\n"));
}

}  // namespace
}  // namespace gpuctk::test
