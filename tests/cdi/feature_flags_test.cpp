// nvidia-ctk's feature flags as `cdi generate --feature-flag` takes them: what each does to the build
// options, and one error line for a flag gpuctk does not support or does not know.
#include "cdi/feature_flags.hpp"

#include <gtest/gtest.h>

namespace gpuctk::cdi {
namespace {

TEST(FeatureFlags, NoAdditionalGidsForDeviceNodesTurnsThemOff) {
  BuildOptions options;
  EXPECT_EQ(options.additional_gids, AdditionalGids::for_device_nodes) << "on by default, as in v1.19+";
  ASSERT_TRUE(apply_feature_flag("no-additional-gids-for-device-nodes", options));
  EXPECT_EQ(options.additional_gids, AdditionalGids::none);
  EXPECT_TRUE(check_feature_flag("no-additional-gids-for-device-nodes"));
}

TEST(FeatureFlags, DisableIpcDiscovererLeavesOutTheIpcFiles) {
  BuildOptions options;
  EXPECT_EQ(options.ipc_files, IpcFiles::mount);
  ASSERT_TRUE(apply_feature_flag("disable-ipc-discoverer", options));
  EXPECT_EQ(options.ipc_files, IpcFiles::leave_out);
  EXPECT_EQ(options.additional_gids, AdditionalGids::for_device_nodes);
  EXPECT_TRUE(check_feature_flag("disable-ipc-discoverer"));
}

TEST(FeatureFlags, FlagsGpuctkAlreadyHonoursChangeNothing) {
  for (const char* name :
       {"disable-nvsandboxutils", "disable-nvsandbox-utils", "disable-multiple-csv-devices"}) {
    BuildOptions options;
    ASSERT_TRUE(apply_feature_flag(name, options)) << name;
    EXPECT_EQ(options.additional_gids, AdditionalGids::for_device_nodes) << name;
    EXPECT_EQ(options.ipc_files, IpcFiles::mount) << name;
    EXPECT_TRUE(check_feature_flag(name)) << name;
  }
}

TEST(FeatureFlags, UnsupportedAndUnknownFlagsAreOneLine) {
  BuildOptions options;
  auto r = apply_feature_flag("enable-coherent-annotations", options);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "feature flag \"enable-coherent-annotations\" is not supported by gpuctk: gpuctk writes no "
            "device annotations");
  EXPECT_FALSE(check_feature_flag("enable-explicit-driver-libraries"));
  r = apply_feature_flag("no-additional-gids", options);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "unknown feature flag \"no-additional-gids\" (nvidia-ctk v1.20's that gpuctk takes: "
            "no-additional-gids-for-device-nodes, disable-ipc-discoverer, disable-nvsandboxutils, "
            "disable-multiple-csv-devices)");
  EXPECT_EQ(options.additional_gids, AdditionalGids::for_device_nodes) << "a refused flag changes nothing";
}

}  // namespace
}  // namespace gpuctk::cdi
