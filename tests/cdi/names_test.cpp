#include "cdi/names.hpp"

#include <gtest/gtest.h>

namespace gpuctk::cdi {
namespace {

std::string error_of(const Result<void>& result) {
  return result ? "ok" : result.error().message;
}

std::string parse_error(std::string_view text) {
  const auto result = parse_qualified_name(text);
  return result ? "ok: " + result->str() : result.error().message;
}

TEST(CdiNamesTest, VendorRules) {
  EXPECT_EQ(error_of(check_vendor("nvidia.com")), "ok");
  EXPECT_EQ(error_of(check_vendor("Vendor_1-x.io")), "ok");
  EXPECT_EQ(error_of(check_vendor("ab")), "ok");
  EXPECT_EQ(error_of(check_vendor("")), "empty vendor");
  EXPECT_EQ(error_of(check_vendor("1vendor.com")), R"(vendor "1vendor.com" must start with a letter)");
  EXPECT_EQ(error_of(check_vendor("_vendor.com")), R"(vendor "_vendor.com" must start with a letter)");
  EXPECT_EQ(error_of(check_vendor("vendor.com-")), R"(vendor "vendor.com-" must end with a letter or digit)");
  EXPECT_EQ(error_of(check_vendor("ven/dor")),
            R"(vendor "ven/dor" contains "/"; only letters, digits, "_", "-" and "." are allowed)");
  // ":" is a device name's (MIG "0:1"), never a vendor's: "a:b/gpu=0" would not parse back.
  EXPECT_EQ(error_of(check_vendor("nvidia:com")),
            R"(vendor "nvidia:com" contains ":"; only letters, digits, "_", "-" and "." are allowed)");
  EXPECT_EQ(error_of(check_vendor("a")),
            R"(vendor "a" is a single character, which crashes released CDI libraries (up to v1.1.0); )"
            "use at least two characters");
}

TEST(CdiNamesTest, ClassRules) {
  EXPECT_EQ(error_of(check_class("gpu")), "ok");
  EXPECT_EQ(error_of(check_class("dotted.class")), "ok");  // needs cdiVersion 0.6.0, see version.hpp
  EXPECT_EQ(error_of(check_class("b")),
            R"(class "b" is a single character, which crashes released CDI libraries (up to v1.1.0); )"
            "use at least two characters");
  EXPECT_EQ(error_of(check_class("_gpu")), R"(class "_gpu" must start with a letter)");
  EXPECT_EQ(error_of(check_class("gpu_")), R"(class "gpu_" must end with a letter or digit)");
  EXPECT_EQ(error_of(check_class("foo/bar")),
            R"(class "foo/bar" contains "/"; only letters, digits, "_", "-" and "." are allowed)");
  EXPECT_EQ(error_of(check_class("gpu:0")),
            R"(class "gpu:0" contains ":"; only letters, digits, "_", "-" and "." are allowed)");
  EXPECT_EQ(error_of(check_class("")), "empty class");
}

TEST(CdiNamesTest, DeviceNameRules) {
  for (const char* name : {"0", "gpu0", "4:1", "dev_1:2.3", "GPU-8f3a-11", "a", "all"}) {
    EXPECT_EQ(error_of(check_device_name(name)), "ok") << name;
  }
  EXPECT_EQ(error_of(check_device_name("")), "empty device name");
  EXPECT_EQ(error_of(check_device_name("-dev")), R"(device name "-dev" must start with a letter or digit)");
  EXPECT_EQ(error_of(check_device_name("dev:")), R"(device name "dev:" must end with a letter or digit)");
  EXPECT_EQ(error_of(check_device_name("gpu 0")),
            R"(device name "gpu 0" contains " "; only letters, digits, "_", "-", "." and ":" are allowed)");
  EXPECT_EQ(error_of(check_device_name("mig/1")),
            R"(device name "mig/1" contains "/"; only letters, digits, "_", "-", "." and ":" are allowed)");
  EXPECT_EQ(error_of(check_device_name("a\tb")),
            R"(device name "a\tb" contains "\t"; only letters, digits, "_", "-", "." and ":" are allowed)");
  EXPECT_TRUE(is_valid_device_name(std::string(1000, 'x')));  // no length limit
  EXPECT_TRUE(is_valid_vendor("nvidia.com"));
  EXPECT_FALSE(is_valid_vendor("a"));
  EXPECT_TRUE(is_valid_class("gpu"));
  EXPECT_FALSE(is_valid_class("gpu-"));
  EXPECT_FALSE(is_valid_device_name("dev:"));
}

TEST(CdiNamesTest, SplitKindAtFirstSlash) {
  EXPECT_EQ(split_kind("nvidia.com/gpu"),
            (std::pair<std::string_view, std::string_view>{"nvidia.com", "gpu"}));
  EXPECT_EQ(split_kind("vendor.com/foo/bar"),
            (std::pair<std::string_view, std::string_view>{"vendor.com", "foo/bar"}));
  EXPECT_EQ(split_kind("noslash"), (std::pair<std::string_view, std::string_view>{"", ""}));
}

TEST(CdiNamesTest, ParsesValidQualifiedNames) {
  const auto name = parse_qualified_name("vendor.com/class=dev");
  ASSERT_TRUE(name) << name.error().message;
  EXPECT_EQ(*name, (QualifiedName{"vendor.com", "class", "dev"}));
  EXPECT_EQ(name->kind(), "vendor.com/class");
  EXPECT_EQ(name->str(), "vendor.com/class=dev");
  for (const char* text :
       {"nvidia.com/gpu=0", "nvidia.com/gpu=4:1", "vendor.com/class=dev_1:2.3", "vendor.com/dotted.class=0",
        "vendor-1_x/class-2_y=dev-3_z", "nvidia.com/gpu=all"}) {
    EXPECT_EQ(parse_error(text), std::string("ok: ") + text);
  }
  // Only the first "=" splits: the name then fails on its own "=".
  EXPECT_EQ(
      parse_error("nvidia.com/gpu=a=b"),
      R"(invalid device name "nvidia.com/gpu=a=b": device name "a=b" contains "="; only letters, digits, )"
      R"("_", "-", "." and ":" are allowed)");
}

TEST(CdiNamesTest, RejectsInvalidQualifiedNamesPrecisely) {
  EXPECT_EQ(parse_error("a/b=c"),
            R"(invalid device name "a/b=c": vendor "a" is a single character, which crashes released CDI )"
            "libraries (up to v1.1.0); use at least two characters");
  EXPECT_EQ(
      parse_error("vendor.com/class=-dev"),
      R"(invalid device name "vendor.com/class=-dev": device name "-dev" must start with a letter or digit)");
  EXPECT_EQ(
      parse_error("vendor.com/class=dev:"),
      R"(invalid device name "vendor.com/class=dev:": device name "dev:" must end with a letter or digit)");
  EXPECT_EQ(parse_error("*.com/*dev=*gpu*"),
            R"(invalid device name "*.com/*dev=*gpu*": vendor "*.com" must start with a letter)");
  EXPECT_EQ(parse_error("nvidia.com/gpu=*"),
            R"(invalid device name "nvidia.com/gpu=*": device name "*" must start with a letter or digit)");
  EXPECT_EQ(parse_error("nvidia.com/gpu"),
            R"(invalid device name "nvidia.com/gpu": missing "=" (want vendor/class=name))");
  EXPECT_EQ(parse_error("gpu=0"), R"(invalid device name "gpu=0": missing "/" (want vendor/class=name))");
  EXPECT_EQ(parse_error(""), R"(invalid device name "": empty (want vendor/class=name))");
  EXPECT_EQ(parse_error("/dev/nvidia0"),
            R"(invalid device name "/dev/nvidia0": a path, not a CDI device (want vendor/class=name))");
  EXPECT_EQ(parse_error("nvidia.com/gpu="), R"(invalid device name "nvidia.com/gpu=": empty device name)");
  EXPECT_EQ(parse_error("nvidia.com/=0"), R"(invalid device name "nvidia.com/=0": empty class)");
  EXPECT_EQ(parse_error("_vendor.com/class=dev"),
            R"(invalid device name "_vendor.com/class=dev": vendor "_vendor.com" must start with a letter)");
  EXPECT_EQ(
      parse_error("vendor.com-/class=dev"),
      R"(invalid device name "vendor.com-/class=dev": vendor "vendor.com-" must end with a letter or digit)");
  EXPECT_EQ(parse_error("vendor.com/_class=dev"),
            R"(invalid device name "vendor.com/_class=dev": class "_class" must start with a letter)");
  EXPECT_EQ(parse_error("vendor.com/class_=dev"),
            R"(invalid device name "vendor.com/class_=dev": class "class_" must end with a letter or digit)");
}

}  // namespace
}  // namespace gpuctk::cdi
