#include "rootfs/image_budget.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace gpuctk::rootfs {
namespace {

constexpr std::chrono::milliseconds k_long{60'000};

// Each kind of work may be spent up to its limit; one more is the budget's end, with one line naming
// the limit, and from then on every charge of any kind fails with that same line.
TEST(ImageBudget, EachKindEndsAtItsLimitWithOneLineAndStaysSpent) {
  for (const auto& row : k_image_work_limits) {
    ImageBudget budget(k_long);
    EXPECT_TRUE(budget.spend(row.work, row.limit)) << row.noun;
    EXPECT_TRUE(budget.check()) << row.noun;
    EXPECT_FALSE(budget.spend(row.work, 1)) << row.noun;
    const std::string line =
        "reading the image in-process: more than " + std::to_string(row.limit) + " " + row.noun;
    ASSERT_FALSE(budget.check()) << row.noun;
    EXPECT_EQ(budget.check().error().message, line);
    EXPECT_EQ(budget.exhausted().error().message, line);
    for (const auto& other : k_image_work_limits) {
      EXPECT_FALSE(budget.spend(other.work, 0)) << row.noun << " then " << other.noun;
    }
    EXPECT_EQ(budget.check().error().message, line);
    EXPECT_EQ(budget.spent(row.work), row.limit + 1);
  }
}

TEST(ImageBudget, NamesEachKind) {
  EXPECT_STREQ(k_image_work_limits[0].noun, "path resolutions");
  EXPECT_STREQ(k_image_work_limits[1].noun, "path components");
  EXPECT_STREQ(k_image_work_limits[2].noun, "bytes read");
  EXPECT_STREQ(k_image_work_limits[3].noun, "directory entries");
}

TEST(ImageBudget, APassedDeadlineEndsIt) {
  ImageBudget seconds(std::chrono::milliseconds(0));
  EXPECT_FALSE(seconds.spend(ImageWork::resolutions, 1));
  EXPECT_EQ(seconds.check().error().message, "reading the image in-process: past its deadline of 0 s");
  ImageBudget millis(std::chrono::milliseconds(-1500));
  EXPECT_FALSE(millis.spend(ImageWork::bytes, 0));
  EXPECT_EQ(millis.check().error().message, "reading the image in-process: past its deadline of -1500 ms");
}

}  // namespace
}  // namespace gpuctk::rootfs
