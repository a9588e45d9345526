#pragma once
// NVIDIA_REQUIRE_* constraints: parsing, and checking them against what the host offers.
//
// An expression is alternatives separated by white space (OR); an alternative is constraints separated
// by "," (AND); a constraint is `<property><op><value>`:
//   cuda>=12.2 brand=tesla,driver>=535,driver<536
// Properties: `cuda`, `driver`, `arch` compare as versions (dotted decimal numbers, component by
// component, a missing component counts as 0, so `driver=535` does NOT match 535.104.05); `brand`
// compares as a case-insensitive string and allows only `=` and `!=`. Property names are
// case-insensitive. Operators: =, !=, <, <=, >, >= (longest match first, so `cuda>>12` is an error).
//
// An unknown property, a missing operator, an empty value or a value that is not a version is an error
// naming the variable, because a typo in a requirement should not quietly admit a container. NVIDIA's
// prestart path fails the same way ("requirement error: invalid expression"); only its CSV mode skips
// unknown properties.
//
// Evaluation: every requirement must hold (AND); a requirement holds when one of its alternatives
// holds. `arch` and `brand` are per GPU: with several GPUs a constraint holds only if it holds for
// every GPU. A host fact that is unknown (empty) fails every constraint that needs it.

#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::inject {

struct Constraint {
  std::string property;  // "cuda", "driver", "arch" or "brand" (lower-case)
  enum class Op { eq, ne, lt, le, gt, ge } op = Op::eq;
  std::string value;  // "12.2", "tesla" (as written)
  std::string text;   // the whole constraint as written, "cuda>=12.2"

  bool operator==(const Constraint&) const = default;
};

struct Requirement {
  std::string variable;    // "NVIDIA_REQUIRE_CUDA" (or "CUDA_VERSION" for a legacy CUDA image)
  std::string expression;  // the value as written
  // Alternatives (OR) of constraint groups (AND). Empty for a blank expression, which always holds.
  std::vector<std::vector<Constraint>> any_of;

  bool operator==(const Requirement&) const = default;
};

// Parses `expression` (the value of `variable`). Errors name the variable and the bad constraint:
//   NVIDIA_REQUIRE_CUDA: invalid constraint "cuda>=": empty value
Result<Requirement> parse_requirement(std::string_view variable, std::string_view expression);

// What the host offers. Empty strings / lists mean unknown.
struct HostFacts {
  std::string driver_version;       // "550.54.15"
  std::string cuda_version;         // "12.4" (see cuda_version_for_driver)
  std::vector<std::string> brands;  // one per GPU, lower-case: "tesla", "nvidia", "geforce"
  std::vector<std::string> archs;   // one per GPU, compute capability: "8.0"
};

// Success if every requirement holds, else one line naming the first unsatisfied requirement:
//   unsatisfied requirement NVIDIA_REQUIRE_CUDA="cuda>=12.5": host CUDA version is 12.4
// When the expression has more than one constraint, the reason of each alternative is given with the
// constraint that failed it, alternatives separated by "; ":
//   unsatisfied requirement NVIDIA_REQUIRE_CUDA="cuda>=12.5 brand=tesla": cuda>=12.5: host CUDA
//   version is 12.4; brand=tesla: host GPU brand is geforce
Result<void> check_requirements(const std::vector<Requirement>& requirements, const HostFacts& host);

// The highest CUDA version the driver branch of `driver_version` ("550.54.15") supports ("12.4"), from
// a table of branches; a driver between two rows gets the lower row, one above the table the top row.
// "" for a version below the table or one that is not a version. Lets the hook learn the CUDA version
// without initialising NVML.
std::string cuda_version_for_driver(std::string_view driver_version);

// NVML's brand name (lower-case) for a GPU model name as /proc/driver/nvidia/gpus/*/information shows
// it: "Tesla T4" -> "tesla", "NVIDIA RTX A6000" -> "nvidiartx", "NVIDIA A100-SXM4-40GB" -> "nvidia".
// "" when the model matches no row.
std::string brand_for_model(std::string_view model);

}  // namespace gpuctk::inject
