#include "cli/spec_differences.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "steps/commands.hpp"
#include "util/strings.hpp"

namespace gpuctk::test {

namespace {

constexpr std::string_view k_container_start = "container-start";

// "(unset)" for an absent optional, else the value.
template <class T>
std::string or_unset(const std::optional<T>& value) {
  return value ? std::to_string(*value) : "(unset)";
}

// 438 -> "0666".
std::string octal(uint32_t mode) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + (mode & 7U)));
    mode >>= 3;
  } while (mode != 0);
  return "0" + digits;
}

// A node as CDI reads it (container-device-interface's fillMissingInfo): major 0 or absent takes major
// and minor from the host node, whatever the spec says of the minor; an absent minor beside a major is 0;
// an absent type or fileMode is the host node's.
Fields node_fields(const cdi::DeviceNode& node) {
  const int64_t major = node.major.value_or(0);
  const bool from_host = major == 0;
  return {
      {"hostPath", node.host_path.empty() ? node.path : node.host_path},
      {"type", node.type.empty() ? "(host)" : node.type},
      {"major", from_host ? "(host)" : std::to_string(major)},
      {"minor", from_host ? "(host)" : std::to_string(node.minor.value_or(0))},
      {"fileMode", node.file_mode ? octal(*node.file_mode) : "(host)"},
      {"permissions", node.permissions.empty() ? "rwm" : node.permissions},
      {"uid", or_unset(node.uid)},
      {"gid", or_unset(node.gid)},
  };
}

// Options that contradict each other: with both in one list their order would matter, and the options
// are compared as a set.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> k_contradicting_options{{
    {"ro", "rw"},
    {"bind", "rbind"},
    {"nosuid", "suid"},
    {"nodev", "dev"},
    {"noexec", "exec"},
    {"private", "rprivate"},
}};

Result<Fields> mount_fields(const cdi::Mount& mount) {
  const std::set<std::string> options(mount.options.begin(), mount.options.end());
  for (const auto& [a, b] : k_contradicting_options) {
    if (options.contains(std::string(a)) && options.contains(std::string(b))) {
      return fail("options " + std::string(a) + " and " + std::string(b) + " together: their order matters");
    }
  }
  return Fields{{"hostPath", mount.host_path},
                {"options", join(options, ",")},
                {"type", mount.type.empty() ? "(unset)" : mount.type}};
}

// Adds `entry` once: a second one is an error (the normaliser would have to guess which counts).
Result<void> add_once(Entries& entries, const std::string& entry, Fields fields) {
  if (!entries.emplace(entry, std::move(fields)).second) {
    return fail(entry + ": twice");
  }
  return {};
}

// The program a hook runs: one entry per path, whose argv[0], env and timeout must be the same for
// every hook of the scope that runs it.
Result<void> add_hook_program(Entries& entries, const cdi::Hook& hook) {
  std::vector<std::string> env = hook.env;
  std::ranges::sort(env);
  Fields fields{{"argv0", hook.args.empty() ? "(none)" : hook.args.front()},
                {"env", join(env, " ")},
                {"timeout", or_unset(hook.timeout)}};
  const std::string entry = "hook program " + hook.path;
  const auto [it, added] = entries.emplace(entry, fields);
  if (!added && it->second != fields) {
    return fail(entry + ": hooks running it differ in argv[0], env or timeout");
  }
  return {};
}

Result<Entries> edits_facts(const cdi::ContainerEdits& edits) {
  if (edits.intel_rdt || !edits.net_devices.empty()) {
    return fail("intelRdt and netDevices are not compared");
  }
  Entries entries;
  for (const auto& node : edits.device_nodes) {
    GPUCTK_TRY(add_once(entries, "node " + node.path, node_fields(node)));
  }
  for (const auto& mount : edits.mounts) {
    auto fields = mount_fields(mount);
    if (!fields) {
      return fail_with("mount " + mount.container_path, fields.error());
    }
    GPUCTK_TRY(add_once(entries, "mount " + mount.container_path, std::move(*fields)));
  }
  for (const auto& env : edits.env) {
    const size_t equals = env.find('=');
    if (equals == std::string::npos || equals == 0) {
      return fail("env " + quote(env) + ": not NAME=VALUE");
    }
    GPUCTK_TRY(add_once(entries, "env " + env.substr(0, equals), {{"value", env.substr(equals + 1)}}));
  }
  for (const uint32_t gid : edits.additional_gids) {
    entries.emplace("gid " + std::to_string(gid), Fields{});  // a set: the CDI library adds each once
  }
  for (const auto& hook : edits.hooks) {
    GPUCTK_TRY(add_hook_program(entries, hook));
    GPUCTK_TRY_ASSIGN(const auto steps, hook_step_entries(hook));
    for (const auto& step : steps) {
      entries.emplace(step, Fields{});
    }
  }
  return entries;
}

const steps::HookOption* find_option(const steps::HookRow& row, std::string_view name) {
  const auto it = std::ranges::find_if(row.options, [&](const auto& o) { return name == o.name; });
  return it == row.options.end() ? nullptr : &*it;
}

// The step row (any row but container-start) that has `option`; an error unless exactly one has it.
Result<const steps::HookRow*> step_owning(std::string_view option) {
  const steps::HookRow* owner = nullptr;
  for (const auto& row : steps::hook_table()) {
    if (row.name == k_container_start || find_option(row, option) == nullptr) {
      continue;
    }
    if (owner != nullptr) {
      return fail(std::string(option) + ": an option of both " + owner->name + " and " + row.name);
    }
    owner = &row;
  }
  if (owner == nullptr) {
    return fail(std::string(option) + ": no step has it");
  }
  return owner;
}

// One option of a command line, with its value ("" for a flag) and the step it belongs to.
struct StepOption {
  std::string step;
  std::string option;
  std::string value;
};

// `args` (after the step's name) of `row`, strictly: only "--name VALUE", "--name=VALUE" and flags.
Result<std::vector<StepOption>> read_options(const steps::HookRow& row, const std::vector<std::string>& args,
                                             bool nvidia) {
  std::vector<StepOption> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!arg.starts_with("--")) {
      return fail(quote(arg) + ": not a --flag");
    }
    const size_t equals = arg.find('=');
    const std::string name = arg.substr(0, equals);
    const steps::HookOption* option = find_option(row, name);
    if (option == nullptr) {
      return fail(name + ": not an option of " + row.name);
    }
    std::string value;
    if (option->kind == steps::HookOption::Kind::flag) {
      if (equals != std::string::npos) {
        return fail(arg + ": a flag takes no value");
      }
    } else if (equals != std::string::npos) {
      value = arg.substr(equals + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return fail(name + ": no value");
    }
    if (nvidia && option->kind == steps::HookOption::Kind::list && value.find(',') != std::string::npos) {
      return fail(name + " " + quote(value) + ": nvidia-cdi-hook splits list values at commas");
    }
    std::string step = row.name;
    if (step == k_container_start) {
      if (option->kind == steps::HookOption::Kind::flag && steps::find_hook(name.substr(2)) != nullptr) {
        step = name.substr(2);  // --disable-device-node-modification: that step, no option of its own
        out.push_back({std::move(step), "", ""});
        continue;
      }
      GPUCTK_TRY_ASSIGN(const steps::HookRow* owner, step_owning(name));
      step = owner->name;
    }
    out.push_back({std::move(step), name, std::move(value)});
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> hook_step_entries(const cdi::Hook& hook) {
  const auto& a = hook.args;
  const std::string line = join(a, " ");
  size_t first = 0;  // the step's name
  bool nvidia = false;
  if (a.size() >= 3 && a[0] == "gpuctk" && a[1] == "hook") {
    first = 2;
  } else if (a.size() >= 2 && a[0] == "nvidia-cdi-hook") {
    first = 1;
    nvidia = true;
  } else {
    return fail("hook " + quote(line) + ": neither `gpuctk hook <step>` nor `nvidia-cdi-hook <step>`");
  }
  const steps::HookRow* row = steps::find_hook(a[first]);
  if (row == nullptr || (nvidia && row->name == k_container_start)) {
    return fail("hook " + quote(line) + ": no step " + quote(a[first]));
  }
  auto options = read_options(*row, {a.begin() + static_cast<ptrdiff_t>(first) + 1, a.end()}, nvidia);
  if (!options) {
    return fail_with("hook " + quote(line), options.error());
  }
  // A value option counts once, its last value (as the hooks read it); lists and flags each value.
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> values;
  for (auto& o : *options) {
    auto& kept = values[{o.step, o.option}];
    const steps::HookOption* option =
        o.option.empty() ? nullptr : find_option(*steps::find_hook(o.step), o.option);
    if (option != nullptr && option->kind == steps::HookOption::Kind::value) {
      kept.clear();
    }
    kept.push_back(std::move(o.value));
  }
  std::vector<std::string> entries;
  const std::string prefix = "hook " + hook.hook_name + " ";
  for (const auto& [key, all] : values) {
    for (const auto& value : all) {
      entries.push_back(prefix + key.first + (key.second.empty() ? "" : " " + key.second + " " + value));
    }
  }
  if (options->empty() && row->name != k_container_start) {
    entries.push_back(prefix + row->name);  // a step without options: disable-device-node-modification
  }
  return entries;
}

Result<SpecFacts> spec_facts(const cdi::Spec& spec) {
  SpecFacts facts;
  auto common = edits_facts(spec.container_edits);
  if (!common) {
    return fail_with("spec", common.error());
  }
  facts["spec"] = std::move(*common);
  facts["spec"]["kind"] = {{"value", spec.kind}};
  for (const auto& [key, value] : spec.annotations) {
    facts["spec"]["annotation " + key] = {{"value", value}};
  }
  for (const auto& device : spec.devices) {
    const std::string scope = "device " + device.name;
    auto entries = edits_facts(device.container_edits);
    if (!entries) {
      return fail_with(scope, entries.error());
    }
    for (const auto& [key, value] : device.annotations) {
      (*entries)["annotation " + key] = {{"value", value}};
    }
    if (!facts.emplace(scope, std::move(*entries)).second) {
      return fail(scope + ": twice");
    }
  }
  return facts;
}

std::vector<std::string> fact_differences(const SpecFacts& nvidia, const SpecFacts& gpuctk) {
  std::vector<std::string> out;
  const auto one_side = [&](const auto& a, const auto& b, const std::string& prefix, const char* side) {
    for (const auto& [key, value] : a) {
      if (!b.contains(key)) {
        out.push_back(prefix + key + " > only in " + side);
      }
    }
  };
  one_side(nvidia, gpuctk, "", "nvidia");
  one_side(gpuctk, nvidia, "", "gpuctk");
  for (const auto& [scope, entries] : nvidia) {
    const auto other = gpuctk.find(scope);
    if (other == gpuctk.end()) {
      continue;
    }
    one_side(entries, other->second, scope + " > ", "nvidia");
    one_side(other->second, entries, scope + " > ", "gpuctk");
    for (const auto& [entry, fields] : entries) {
      const auto theirs = other->second.find(entry);
      if (theirs == other->second.end()) {
        continue;
      }
      // Both sides' fields come from the same code: the same names.
      for (const auto& [field, value] : fields) {
        const std::string& them = theirs->second.at(field);
        if (value != them) {
          out.push_back(scope + " > " + entry + " > " + field + ": nvidia [" + value + "] gpuctk [" + them +
                        "]");
        }
      }
    }
  }
  std::ranges::sort(out);
  return out;
}

bool wildcard_match(std::string_view pattern, std::string_view text) {
  // Greedy with backtracking to the last '*': linear enough for one-line keys.
  size_t p = 0;
  size_t t = 0;
  size_t star = std::string_view::npos;
  size_t resume = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

namespace {

// The cells of a table line "| a | b | c |", trimmed.
std::vector<std::string> table_cells(std::string_view line) {
  std::vector<std::string> cells;
  line = trim(line);
  line.remove_prefix(1);
  if (line.ends_with('|')) {
    line.remove_suffix(1);
  }
  for (const auto cell : split(line, '|')) {
    cells.emplace_back(trim(cell));
  }
  return cells;
}

// "`a > b` `c*`" -> {"a > b", "c*"}.
Result<std::vector<std::string>> pattern_cell(std::string_view cell) {
  std::vector<std::string> patterns;
  while (!cell.empty()) {
    if (cell.front() == ' ') {
      cell.remove_prefix(1);
      continue;
    }
    const size_t close = cell.find('`', 1);
    if (cell.front() != '`' || close == std::string_view::npos || close == 1) {
      return fail("a pattern cell is `backticked` patterns separated by spaces");
    }
    patterns.emplace_back(cell.substr(1, close - 1));
    cell.remove_prefix(close + 1);
  }
  if (patterns.empty()) {
    return fail("no pattern");
  }
  return patterns;
}

}  // namespace

Result<std::vector<DifferenceRow>> parse_difference_table(std::string_view markdown) {
  std::vector<DifferenceRow> rows;
  bool in_table = false;
  bool found = false;
  size_t number = 0;
  for (const auto raw : split(markdown, '\n')) {
    ++number;
    const std::string_view line = trim(raw);
    const std::string at = "line " + std::to_string(number) + ": ";
    if (!line.starts_with('|')) {
      in_table = false;
      continue;
    }
    const auto cells = table_cells(line);
    if (!in_table) {
      in_table = true;
      if (cells == std::vector<std::string>{"pattern", "kind", "why"}) {
        if (found) {
          return fail(at + "a second table of differences");
        }
        found = true;
      } else {
        in_table = false;  // another table: not ours
      }
      continue;
    }
    if (!found || std::ranges::all_of(cells, [](const std::string& c) {
          return !c.empty() && c.find_first_not_of(":-") == std::string::npos;
        })) {
      continue;  // not our table, or the line under the header
    }
    if (cells.size() != 3) {
      return fail(at + "expected 3 cells (pattern, kind, why), got " + std::to_string(cells.size()));
    }
    auto patterns = pattern_cell(cells[0]);
    if (!patterns) {
      return fail(at + patterns.error().message);
    }
    if (std::ranges::find(k_difference_kinds, cells[1]) == std::end(k_difference_kinds)) {
      return fail(at + "kind " + quote(cells[1]) +
                  " is not one of design, fixture, gap (issue 34), nvidia-bug");
    }
    if (cells[2].empty()) {
      return fail(at + "no why");
    }
    rows.push_back({std::move(*patterns), cells[1], cells[2], number});
  }
  if (!found) {
    return fail("no table with the header | pattern | kind | why |");
  }
  return rows;
}

std::vector<std::string> check_against_table(const std::vector<std::string>& differences,
                                             const std::vector<DifferenceRow>& rows) {
  std::vector<std::string> out;
  std::set<std::pair<size_t, size_t>> used;  // (row, pattern)
  for (const auto& difference : differences) {
    std::vector<std::string> lines;  // of the rows that match it
    for (size_t r = 0; r < rows.size(); ++r) {
      bool matched = false;
      for (size_t p = 0; p < rows[r].patterns.size(); ++p) {
        if (wildcard_match(rows[r].patterns[p], difference)) {
          used.insert({r, p});
          matched = true;
        }
      }
      if (matched) {
        lines.push_back(std::to_string(rows[r].line));
      }
    }
    if (lines.empty()) {
      out.push_back("not in the table: " + difference);
    } else if (lines.size() > 1) {
      out.push_back("in rows at lines " + join(lines, " and ") + ": " + difference);
    }
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t p = 0; p < rows[r].patterns.size(); ++p) {
      if (!used.contains({r, p})) {
        out.push_back("stale row at line " + std::to_string(rows[r].line) + ": `" + rows[r].patterns[p] +
                      "` matches no difference");
      }
    }
  }
  return out;
}

}  // namespace gpuctk::test
