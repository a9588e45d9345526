#include "inject/requirements.hpp"

#include <gtest/gtest.h>

namespace gpuctk::inject {
namespace {

using Op = Constraint::Op;

Requirement parsed(std::string_view expression, std::string_view variable = "NVIDIA_REQUIRE_CUDA") {
  auto result = parse_requirement(variable, expression);
  EXPECT_TRUE(result) << result.error().message;
  return result.value_or(Requirement{});
}

std::string parse_error(std::string_view expression, std::string_view variable = "NVIDIA_REQUIRE_CUDA") {
  auto result = parse_requirement(variable, expression);
  return result ? "(parsed)" : result.error().message;
}

// "" when `expression` holds on `host`, else the error message.
std::string check(std::string_view expression, const HostFacts& host,
                  std::string_view variable = "NVIDIA_REQUIRE_CUDA") {
  auto requirement = parse_requirement(variable, expression);
  if (!requirement) {
    return "(parse error) " + requirement.error().message;
  }
  auto result = check_requirements({*requirement}, host);
  return result ? "" : result.error().message;
}

HostFacts host_550_tesla() {
  return HostFacts{"550.54.15", "12.4", {"tesla"}, {"7.5"}};
}

TEST(Requirements, ParsesOneConstraint) {
  const auto r = parsed("cuda>=12.2");
  EXPECT_EQ(r.variable, "NVIDIA_REQUIRE_CUDA");
  EXPECT_EQ(r.expression, "cuda>=12.2");
  ASSERT_EQ(r.any_of.size(), 1u);
  ASSERT_EQ(r.any_of[0].size(), 1u);
  EXPECT_EQ(r.any_of[0][0], (Constraint{"cuda", Op::ge, "12.2", "cuda>=12.2"}));
}

TEST(Requirements, SpaceIsOrCommaIsAnd) {
  const auto r = parsed("cuda>=12.2 brand=tesla,driver>=535,driver<536");
  ASSERT_EQ(r.any_of.size(), 2u);
  EXPECT_EQ(r.any_of[0], (std::vector<Constraint>{{"cuda", Op::ge, "12.2", "cuda>=12.2"}}));
  EXPECT_EQ(r.any_of[1], (std::vector<Constraint>{{"brand", Op::eq, "tesla", "brand=tesla"},
                                                  {"driver", Op::ge, "535", "driver>=535"},
                                                  {"driver", Op::lt, "536", "driver<536"}}));
}

TEST(Requirements, ExtraWhiteSpaceSeparatesAlternativesOnce) {
  const auto r = parsed("  cuda>=12.2 \t  arch>=8.0  ");
  ASSERT_EQ(r.any_of.size(), 2u);
  EXPECT_EQ(r.any_of[0][0].text, "cuda>=12.2");
  EXPECT_EQ(r.any_of[1][0], (Constraint{"arch", Op::ge, "8.0", "arch>=8.0"}));
}

TEST(Requirements, EveryOperatorLongestMatchFirst) {
  const std::pair<std::string_view, Op> cases[] = {
      {"driver=535", Op::eq},  {"driver!=535", Op::ne}, {"driver<535", Op::lt},
      {"driver<=535", Op::le}, {"driver>535", Op::gt},  {"driver>=535", Op::ge},
  };
  for (const auto& [text, op] : cases) {
    const auto r = parsed(text);
    ASSERT_EQ(r.any_of.size(), 1u) << text;
    EXPECT_EQ(r.any_of[0][0].op, op) << text;
    EXPECT_EQ(r.any_of[0][0].value, "535") << text;
  }
}

TEST(Requirements, PropertyNamesAreCaseInsensitive) {
  EXPECT_EQ(parsed("CUDA>=12").any_of[0][0], (Constraint{"cuda", Op::ge, "12", "CUDA>=12"}));
  EXPECT_EQ(parsed("Brand=Tesla").any_of[0][0], (Constraint{"brand", Op::eq, "Tesla", "Brand=Tesla"}));
}

TEST(Requirements, BlankExpressionHasNoConstraintsAndHolds) {
  EXPECT_TRUE(parsed("").any_of.empty());
  EXPECT_TRUE(parsed("  ").any_of.empty());
  EXPECT_EQ(check("", HostFacts{}), "");
}

TEST(Requirements, MalformedExpressionsNameTheVariableAndConstraint) {
  EXPECT_EQ(
      parse_error("cuda>>12"),
      R"(NVIDIA_REQUIRE_CUDA: invalid constraint "cuda>>12": ">12" is not a version (want dotted numbers like 12.4))");
  EXPECT_EQ(parse_error("cuda>="), R"(NVIDIA_REQUIRE_CUDA: invalid constraint "cuda>=": empty value)");
  EXPECT_EQ(
      parse_error("foo=1", "NVIDIA_REQUIRE_FOO"),
      R"(NVIDIA_REQUIRE_FOO: invalid constraint "foo=1": unknown property "foo" (known: cuda, driver, arch, brand))");
  EXPECT_EQ(
      parse_error("cuda12"),
      R"(NVIDIA_REQUIRE_CUDA: invalid constraint "cuda12": missing operator (want one of =, !=, <, <=, >, >=))");
  EXPECT_EQ(
      parse_error(">=12"),
      R"(NVIDIA_REQUIRE_CUDA: invalid constraint ">=12": missing property (want cuda, driver, arch or brand))");
  EXPECT_EQ(
      parse_error("cuda!12"),
      R"(NVIDIA_REQUIRE_CUDA: invalid constraint "cuda!12": invalid operator (want one of =, !=, <, <=, >, >=))");
  EXPECT_EQ(
      parse_error("cuda==12"),
      R"(NVIDIA_REQUIRE_CUDA: invalid constraint "cuda==12": "=12" is not a version (want dotted numbers like 12.4))");
  EXPECT_EQ(
      parse_error("cuda>=12..4"),
      R"(NVIDIA_REQUIRE_CUDA: invalid constraint "cuda>=12..4": "12..4" is not a version (want dotted numbers like 12.4))");
  EXPECT_EQ(parse_error("driver>=535,"), R"(NVIDIA_REQUIRE_CUDA: empty constraint in "driver>=535,")");
  EXPECT_EQ(parse_error("cuda>=12 ,driver>=535"),
            R"(NVIDIA_REQUIRE_CUDA: empty constraint in ",driver>=535")");
  EXPECT_EQ(parse_error("brand>tesla"),
            R"(NVIDIA_REQUIRE_CUDA: invalid constraint "brand>tesla": brand supports only = and !=)");
  EXPECT_EQ(
      parse_error("brand=te$la"),
      R"(NVIDIA_REQUIRE_CUDA: invalid constraint "brand=te$la": "te$la" is not a brand name (want letters, digits, "_" or "-"))");
}

TEST(Requirements, VersionOperatorsEvaluateNumerically) {
  struct Case {
    std::string_view expression;
    bool holds;
  };
  // Host CUDA 12.4.
  const Case cases[] = {
      {"cuda=12.4", true},   {"cuda=12.5", false},   {"cuda!=12.5", true}, {"cuda!=12.4", false},
      {"cuda<12.5", true},   {"cuda<12.4", false},   {"cuda<=12.4", true}, {"cuda<=12.3", false},
      {"cuda>12.3", true},   {"cuda>12.4", false},   {"cuda>=12.4", true}, {"cuda>=12.5", false},
      {"cuda=12.4.0", true},                          // missing components are 0
      {"cuda>=12", true},    {"cuda>=12.10", false},  // numeric, not lexical: 12.10 > 12.4
      {"cuda>=12.04", true},                          // leading zero: 04 == 4
  };
  for (const auto& c : cases) {
    EXPECT_EQ(check(c.expression, host_550_tesla()).empty(), c.holds) << c.expression;
  }
}

TEST(Requirements, DriverEqualityComparesEveryComponent) {
  EXPECT_EQ(check("driver>=535,driver<536", HostFacts{"535.104.05", "12.2", {}, {}}), "");
  EXPECT_EQ(check("driver=535", HostFacts{"535.104.05", "12.2", {}, {}}),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="driver=535": host driver version is 535.104.05)");
}

TEST(Requirements, FailureNamesVariableConstraintAndHostValue) {
  EXPECT_EQ(check("cuda>=12.4", host_550_tesla()), "");
  EXPECT_EQ(check("cuda>=12.5", host_550_tesla()),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="cuda>=12.5": host CUDA version is 12.4)");
}

TEST(Requirements, OrHoldsWhenOneAlternativeHolds) {
  EXPECT_EQ(check("cuda>=12.5 brand=tesla,driver>=535", host_550_tesla()), "");
  EXPECT_EQ(check("cuda>=12.5 brand=geforce,driver>=535", host_550_tesla()),
            "unsatisfied requirement NVIDIA_REQUIRE_CUDA=\"cuda>=12.5 brand=geforce,driver>=535\": "
            "cuda>=12.5: host CUDA version is 12.4; brand=geforce: host GPU brand is tesla");
}

TEST(Requirements, AndFailsOnTheFirstFailingConstraint) {
  EXPECT_EQ(
      check("cuda>=12.0,driver>=555", host_550_tesla()),
      R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="cuda>=12.0,driver>=555": driver>=555: host driver version is 550.54.15)");
}

TEST(Requirements, BrandIsCaseInsensitive) {
  EXPECT_EQ(check("brand=TESLA", host_550_tesla()), "");
  EXPECT_EQ(check("brand!=Tesla", host_550_tesla()),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="brand!=Tesla": host GPU brand is tesla)");
}

TEST(Requirements, PerGpuPropertiesMustHoldOnEveryGpu) {
  const HostFacts mixed{"550.54.15", "12.4", {"nvidia", "geforce"}, {"8.0", "7.5"}};
  EXPECT_EQ(check("arch>=7.5", mixed), "");
  EXPECT_EQ(
      check("arch>=8.0", mixed),
      R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="arch>=8.0": host GPU architectures are 8.0, 7.5)");
  EXPECT_EQ(check("brand!=quadro", mixed), "");
  EXPECT_EQ(
      check("brand!=geforce", mixed),
      R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="brand!=geforce": host GPU brands are nvidia, geforce)");
  EXPECT_EQ(check("arch>=8.0", HostFacts{"", "", {}, {"7.5"}}),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="arch>=8.0": host GPU architecture is 7.5)");
}

TEST(Requirements, UnknownHostFactsFail) {
  const HostFacts unknown;
  EXPECT_EQ(check("cuda>=12.0", unknown),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="cuda>=12.0": host CUDA version is unknown)");
  EXPECT_EQ(check("driver>=535", unknown),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="driver>=535": host driver version is unknown)");
  EXPECT_EQ(check("arch>=8.0", unknown),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="arch>=8.0": host GPU architecture is unknown)");
  EXPECT_EQ(check("brand=tesla", unknown),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="brand=tesla": host GPU brand is unknown)");
  EXPECT_EQ(check("brand=tesla", HostFacts{"", "", {"tesla", ""}, {}}),
            R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="brand=tesla": host GPU brand is unknown)");
  EXPECT_EQ(
      check("driver>=535", HostFacts{"garbage", "", {}, {}}),
      R"(unsatisfied requirement NVIDIA_REQUIRE_CUDA="driver>=535": host driver version "garbage" is not a version)");
}

TEST(Requirements, EveryRequirementMustHold) {
  const auto cuda = parse_requirement("NVIDIA_REQUIRE_CUDA", "cuda>=12.0");
  const auto arch = parse_requirement("NVIDIA_REQUIRE_ARCH", "arch>=8.0");
  ASSERT_TRUE(cuda && arch);
  EXPECT_TRUE(check_requirements({*cuda, *arch}, HostFacts{"550.54.15", "12.4", {"nvidia"}, {"8.0"}}));
  const auto result = check_requirements({*cuda, *arch}, host_550_tesla());
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().message,
            R"(unsatisfied requirement NVIDIA_REQUIRE_ARCH="arch>=8.0": host GPU architecture is 7.5)");
  EXPECT_TRUE(check_requirements({}, HostFacts{}));
}

TEST(Requirements, CudaVersionForDriverBranch) {
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"550.54.15", "12.4"},
           {"535.183.01", "12.2"},
           {"450.80.02", "11.0"},
           {"470.82.01", "11.4"},
           {"565.57.01", "12.7"},
           {"580.95.05", "13.0"},
           {"570", "12.8"},
           // Between rows: the lower row; above the table: the top row.
           {"480.1", "11.4"},
           {"540.4.0", "12.2"},
           {"610.10", "13.0"},
           // Below the table, or not a version.
           {"440.33.01", ""},
           {"390.157", ""},
           {"", ""},
           {"garbage", ""},
           {"550.x", ""},
       }) {
    EXPECT_EQ(cuda_version_for_driver(in), want) << in;
  }
}

TEST(Requirements, BrandForModel) {
  for (const auto& [in, want] : std::vector<std::pair<std::string, std::string>>{
           {"Tesla T4", "tesla"},
           {"Tesla V100-SXM2-16GB", "tesla"},
           {"Quadro RTX 6000", "quadro"},
           {"NVIDIA GeForce RTX 4090", "geforce"},
           {"GeForce GTX 1080 Ti", "geforce"},
           {"NVIDIA RTX A6000", "nvidiartx"},
           {"NVIDIA A100-SXM4-40GB", "nvidia"},
           {"NVIDIA H100 80GB HBM3", "nvidia"},
           {"Titan", "titan"},
           {"NVIDIA TITAN RTX", "titan"},
           {"GRID K520", "grid"},
           {"NVS 510", "nvs"},
       }) {
    EXPECT_EQ(brand_for_model(in), want) << in;
  }
  EXPECT_EQ(brand_for_model("Some RTX card"), "");  // "rtx" alone is not NVIDIA RTX
  EXPECT_EQ(brand_for_model("A100 NVIDIA"), "");    // "nvidia" must come first
  EXPECT_EQ(brand_for_model(""), "");
}

}  // namespace
}  // namespace gpuctk::inject
