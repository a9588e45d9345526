#include "inject/requirements.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "util/strings.hpp"

namespace gpuctk::inject {

namespace {

using Op = Constraint::Op;

// ---- versions ------------------------------------------------------------------------------------

using Version = std::vector<uint64_t>;

// "12.4" -> {12, 4}; nothing unless `text` is dotted decimal numbers with no empty component.
std::optional<Version> parse_version(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  Version version;
  for (const auto piece : split(text, '.')) {
    const auto number = parse_unsigned(piece);
    if (!number) {
      return std::nullopt;
    }
    version.push_back(*number);
  }
  return version;
}

// <0, 0, >0 like strcmp; a missing component counts as 0 ("12" == "12.0").
int compare_versions(const Version& a, const Version& b) {
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = i < a.size() ? a[i] : 0;
    const uint64_t y = i < b.size() ? b[i] : 0;
    if (x != y) {
      return x < y ? -1 : 1;
    }
  }
  return 0;
}

bool holds(int comparison, Op op) {
  switch (op) {
    case Op::eq:
      return comparison == 0;
    case Op::ne:
      return comparison != 0;
    case Op::lt:
      return comparison < 0;
    case Op::le:
      return comparison <= 0;
    case Op::gt:
      return comparison > 0;
    case Op::ge:
      return comparison >= 0;
  }
  return false;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

// ---- properties ----------------------------------------------------------------------------------

enum class ValueKind : uint8_t { version, brand };
enum class Scope : uint8_t { host, per_gpu };

struct PropertyRow {
  std::string_view name;
  ValueKind kind;
  Scope scope;
  std::string_view host_noun;  // for messages: "host CUDA version is 12.4"; per GPU, "+s are" for several
};

// Every property a constraint may name.
constexpr PropertyRow k_properties[] = {
    {"cuda", ValueKind::version, Scope::host, "host CUDA version"},      // highest CUDA the driver supports
    {"driver", ValueKind::version, Scope::host, "host driver version"},  // kernel module version, "550.54.15"
    {"arch", ValueKind::version, Scope::per_gpu, "host GPU architecture"},  // compute capability, "8.0"
    {"brand", ValueKind::brand, Scope::per_gpu, "host GPU brand"},          // NVML brand, "tesla"
};

const PropertyRow* find_property(std::string_view name) {
  for (const auto& row : k_properties) {
    if (row.name == name) {
      return &row;
    }
  }
  return nullptr;
}

struct OpRow {
  std::string_view text;
  Op op;
};

// Two-character operators first: the longest match wins.
constexpr OpRow k_ops[] = {
    {"!=", Op::ne}, {"<=", Op::le}, {">=", Op::ge}, {"=", Op::eq}, {"<", Op::lt}, {">", Op::gt},
};

bool is_brand_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

// Parses one constraint; the error says what is wrong with it (the caller adds variable and text).
Result<Constraint> parse_constraint(std::string_view text) {
  const auto op_at = text.find_first_of("=!<>");
  if (op_at == std::string_view::npos) {
    return fail("missing operator (want one of =, !=, <, <=, >, >=)");
  }
  const std::string property = lower(text.substr(0, op_at));
  if (property.empty()) {
    return fail("missing property (want cuda, driver, arch or brand)");
  }
  const PropertyRow* row = find_property(property);
  if (row == nullptr) {
    return fail("unknown property " + quote(text.substr(0, op_at)) + " (known: cuda, driver, arch, brand)");
  }
  std::string_view rest = text.substr(op_at);
  const OpRow* op = nullptr;
  for (const auto& candidate : k_ops) {
    if (rest.starts_with(candidate.text)) {
      op = &candidate;
      break;
    }
  }
  if (op == nullptr) {
    return fail("invalid operator (want one of =, !=, <, <=, >, >=)");
  }
  const std::string_view value = rest.substr(op->text.size());
  if (value.empty()) {
    return fail("empty value");
  }
  if (row->kind == ValueKind::version) {
    if (!parse_version(value)) {
      return fail(quote(value) + " is not a version (want dotted numbers like 12.4)");
    }
  } else {
    if (op->op != Op::eq && op->op != Op::ne) {
      return fail(std::string(row->name) + " supports only = and !=");
    }
    if (!std::ranges::all_of(value, is_brand_char)) {
      return fail(quote(value) + " is not a brand name (want letters, digits, \"_\" or \"-\")");
    }
  }
  return Constraint{std::string(row->name), op->op, std::string(value), std::string(text)};
}

// ---- evaluation ----------------------------------------------------------------------------------

// Whether the known `host_value` satisfies `constraint`; an error when it cannot be compared.
Result<bool> satisfies(const Constraint& constraint, const PropertyRow& row, const std::string& host_value) {
  if (row.kind == ValueKind::brand) {
    return holds(lower(host_value) == lower(constraint.value) ? 0 : 1, constraint.op);
  }
  const auto host = parse_version(host_value);
  if (!host) {
    return fail(std::string(row.host_noun) + " " + quote(host_value) + " is not a version");
  }
  const auto wanted = parse_version(constraint.value);
  if (!wanted) {
    return fail("constraint value " + quote(constraint.value) + " is not a version");
  }
  return holds(compare_versions(*host, *wanted), constraint.op);
}

// Nothing if `constraint` holds on `host`, else the reason ("host CUDA version is 12.4").
std::optional<std::string> failure(const Constraint& constraint, const HostFacts& host) {
  const PropertyRow* row = find_property(constraint.property);
  if (row == nullptr) {
    return "unknown property " + quote(constraint.property);
  }
  std::vector<std::string> values;
  if (row->scope == Scope::host) {
    values.push_back(row->name == "cuda" ? host.cuda_version : host.driver_version);
  } else {
    values = row->kind == ValueKind::brand ? host.brands : host.archs;
  }
  if (values.empty() || std::ranges::any_of(values, [](const std::string& v) { return v.empty(); })) {
    return std::string(row->host_noun) + " is unknown";
  }
  for (const auto& value : values) {
    const auto ok = satisfies(constraint, *row, value);
    if (!ok) {
      return ok.error().message;
    }
    if (*ok) {
      continue;
    }
    // Fails on this GPU: show every host value, so several GPUs read as one picture.
    if (values.size() == 1) {
      return std::string(row->host_noun) + " is " + value;
    }
    return std::string(row->host_noun) + "s are " + join(values, ", ");
  }
  return std::nullopt;
}

}  // namespace

Result<Requirement> parse_requirement(std::string_view variable, std::string_view expression) {
  Requirement requirement{std::string(variable), std::string(expression), {}};
  const std::string prefix(variable);
  constexpr std::string_view k_space = " \t\r\n";
  std::string_view rest = expression;
  while (true) {
    const auto start = rest.find_first_not_of(k_space);
    if (start == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(start);
    const auto end = std::min(rest.find_first_of(k_space), rest.size());
    const std::string_view alternative = rest.substr(0, end);
    rest.remove_prefix(end);

    std::vector<Constraint> group;
    for (const auto piece : split(alternative, ',')) {
      if (piece.empty()) {
        return fail(prefix + ": empty constraint in " + quote(alternative));
      }
      auto constraint = parse_constraint(piece);
      if (!constraint) {
        return fail(prefix + ": invalid constraint " + quote(piece) + ": " + constraint.error().message);
      }
      group.push_back(std::move(*constraint));
    }
    requirement.any_of.push_back(std::move(group));
  }
  return requirement;
}

Result<void> check_requirements(const std::vector<Requirement>& requirements, const HostFacts& host) {
  for (const auto& requirement : requirements) {
    if (requirement.any_of.empty()) {
      continue;  // blank expression: no constraint
    }
    size_t constraint_count = 0;
    for (const auto& group : requirement.any_of) {
      constraint_count += group.size();
    }
    std::vector<std::string> reasons;  // one per failed alternative
    bool satisfied = false;
    for (const auto& group : requirement.any_of) {
      std::optional<std::string> why;
      for (const auto& constraint : group) {
        why = failure(constraint, host);
        if (why) {
          reasons.push_back(constraint_count == 1 ? *why : constraint.text + ": " + *why);
          break;
        }
      }
      if (!why) {
        satisfied = true;
        break;
      }
    }
    if (!satisfied) {
      return fail("unsatisfied requirement " + requirement.variable + "=" + quote(requirement.expression) +
                  ": " + join(reasons, "; "));
    }
  }
  return {};
}

namespace {

struct CudaRow {
  uint64_t branch;        // driver branch (major version)
  std::string_view cuda;  // highest CUDA version that branch supports
};

// Driver branch -> the CUDA version `nvidia-smi` reports for it (CUDA toolkit release notes, table 3).
// Ascending by branch.
constexpr CudaRow k_cuda_by_branch[] = {
    {450, "11.0"},  // R450, CUDA 11.0 GA
    {455, "11.1"},  // R455, CUDA 11.1
    {460, "11.2"},  // R460, CUDA 11.2
    {465, "11.3"},  // R465, CUDA 11.3
    {470, "11.4"},  // R470 (LTSB), CUDA 11.4
    {495, "11.5"},  // R495, CUDA 11.5
    {510, "11.6"},  // R510, CUDA 11.6
    {515, "11.7"},  // R515, CUDA 11.7
    {520, "11.8"},  // R520, CUDA 11.8
    {525, "12.0"},  // R525, CUDA 12.0
    {530, "12.1"},  // R530, CUDA 12.1
    {535, "12.2"},  // R535 (LTSB), CUDA 12.2
    {545, "12.3"},  // R545, CUDA 12.3
    {550, "12.4"},  // R550, CUDA 12.4
    {555, "12.5"},  // R555, CUDA 12.5
    {560, "12.6"},  // R560, CUDA 12.6
    {565, "12.7"},  // R565, reports CUDA 12.7 (no 12.7 toolkit was released)
    {570, "12.8"},  // R570, CUDA 12.8
    {575, "12.9"},  // R575, CUDA 12.9
    {580, "13.0"},  // R580, CUDA 13.0
};

struct BrandRow {
  std::string_view words;  // lower-case words that must appear consecutively in the model name
  bool at_start;           // the words must begin the model name
  std::string_view brand;  // NVML brand name, lower-case
};

// Model name -> NVML brand. First matching row wins, so the specific rows come first.
constexpr BrandRow k_brands[] = {
    {"tesla", false, "tesla"},          // "Tesla T4", "Tesla V100-SXM2-16GB" (datacenter up to Turing)
    {"quadro", false, "quadro"},        // "Quadro RTX 6000", "Quadro P4000"
    {"geforce", false, "geforce"},      // "NVIDIA GeForce RTX 4090", "GeForce GTX 1080 Ti"
    {"titan", false, "titan"},          // "NVIDIA TITAN RTX", "TITAN V"
    {"nvs", false, "nvs"},              // "NVS 510" (multi-display business cards)
    {"grid", false, "grid"},            // "GRID K520" (virtual GPU boards)
    {"nvidia rtx", true, "nvidiartx"},  // "NVIDIA RTX A6000", "NVIDIA RTX 6000 Ada Generation"
    {"nvidia", true, "nvidia"},  // "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3" (datacenter since Ampere)
};

}  // namespace

std::string cuda_version_for_driver(std::string_view driver_version) {
  const auto version = parse_version(trim(driver_version));
  if (!version) {
    return "";
  }
  const uint64_t branch = version->front();
  std::string_view cuda;
  for (const auto& row : k_cuda_by_branch) {
    if (row.branch <= branch) {
      cuda = row.cuda;
    }
  }
  return std::string(cuda);
}

std::string brand_for_model(std::string_view model) {
  std::vector<std::string> words;
  for (const auto piece : split(trim(model), ' ')) {
    if (!piece.empty()) {
      words.push_back(lower(piece));
    }
  }
  for (const auto& row : k_brands) {
    std::vector<std::string_view> wanted;
    for (const auto piece : split(row.words, ' ')) {
      wanted.push_back(piece);
    }
    const size_t last_start = row.at_start ? 0 : words.size();
    for (size_t start = 0; start <= last_start && start + wanted.size() <= words.size(); ++start) {
      if (std::equal(wanted.begin(), wanted.end(), words.begin() + static_cast<std::ptrdiff_t>(start))) {
        return std::string(row.brand);
      }
    }
  }
  return "";
}

}  // namespace gpuctk::inject
