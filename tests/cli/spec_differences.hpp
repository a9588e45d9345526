#pragma once
// What a CDI spec means, as facts, and the differences between two specs' facts: the differential test of
// gpuctk's `cdi generate` against NVIDIA's v1.20.0 (nvidia_v120_differential_test.cpp), and the table of
// deliberate differences it holds them against (tests/data/nvidia-v1.20-specs/differences.md).
//
// Normalised away (representation, not meaning): the order of devices, nodes, mounts, mount options, env
// entries, additionalGids, hooks and hook steps; how hook steps are split into processes (NVIDIA writes
// one `nvidia-cdi-hook <step>` per step, gpuctk one `gpuctk hook container-start` with several steps'
// options); `--opt=value` against `--opt value`; what CDI defines an absent value to be (hostPath: the
// path; permissions: rwm; major 0 or absent: major and minor from the host node; an absent minor beside
// a major: 0), shown as "(host)" where CDI takes the value from the host node (type, fileMode, the numbers
// of a major 0) so that it differs from any value a spec can write. cdiVersion is not compared: it is the
// minimum the rest needs. Everything else is a fact; what the normaliser cannot read without guessing (a hook
// it does not know, a flag its hook does not have, a path twice in one scope) is an error, never skipped.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cdi/spec.hpp"
#include "util/error.hpp"

namespace gpuctk::test {

// scope ("spec": the spec-wide containerEdits; "device <name>") -> entry ("node /dev/nvidia0", "mount
// /usr/bin/nvidia-smi", "env NAME", "gid 44", "hook createContainer create-symlinks --link T::L",
// "hook program /usr/bin/nvidia-cdi-hook", "kind") -> field ("minor", "options", "value") -> value.
// An entry that is only there or not (a gid, a hook step) has no fields.
using Fields = std::map<std::string, std::string>;
using Entries = std::map<std::string, Fields>;
using SpecFacts = std::map<std::string, Entries>;

// The facts of `spec`. Errors name the scope and entry the normaliser refused.
Result<SpecFacts> spec_facts(const cdi::Spec& spec);

// The steps one hook runs, as entries "hook <hookName> <step>[ <option> <value>]": `nvidia-cdi-hook
// <step> --opt V...` (NVIDIA's) and `gpuctk hook <step|container-start> --opt V...` (gpuctk's), read
// with gpuctk's hook table (steps/commands.hpp: NVIDIA's step names and flags). container-start's
// options go to the step row that has them (--link: create-symlinks, --folder: update-ldcache, ...); its
// flag --<step> is that step. A step given no option is one bare entry. Errors: another program, a step
// or flag the table does not have, a flag without its value, a value with a comma in NVIDIA's form (its
// parser splits lists there).
Result<std::vector<std::string>> hook_step_entries(const cdi::Hook& hook);

// The differences between two specs' facts, sorted, one per line:
//   "device 4 > only in gpuctk"                        a device on one side only
//   "spec > env NVIDIA_CTK_LIBCUDA_DIR > only in nvidia" an entry on one side only
//   "device 0 > node /dev/nvidia0 > minor: nvidia [0] gpuctk [1]"  a field that differs
std::vector<std::string> fact_differences(const SpecFacts& nvidia, const SpecFacts& gpuctk);

// One row of the table of deliberate differences: the patterns that match its differences' keys (`*`
// matches any run of characters, anything else only itself), what kind of difference it is and why.
struct DifferenceRow {
  std::vector<std::string> patterns;
  std::string kind;
  std::string why;
  size_t line = 0;  // in the markdown file, for messages
};

// The kinds a row may have.
inline constexpr std::string_view k_difference_kinds[] = {
    "design",          // gpuctk deliberately does otherwise (README "Differences from NVIDIA's toolkit")
    "fixture",         // comes from how NVIDIA's spec was made on the fixture host, not from either generator
    "gap (issue 34)",  // gpuctk lacks what v1.20.0 does: the row goes when the fix lands
    "nvidia-bug",      // v1.20.0's output is wrong
};

// The rows of the markdown table whose header is `| pattern | kind | why |`: each pattern cell one or
// more `backticked` patterns separated by spaces, each kind one of k_difference_kinds, each why not
// empty. Errors name the line.
Result<std::vector<DifferenceRow>> parse_difference_table(std::string_view markdown);

// Whether `pattern` (`*`: any run of characters, possibly empty) matches all of `text`.
bool wildcard_match(std::string_view pattern, std::string_view text);

// What is wrong with `rows` for `differences`, one line each: "not in the table: <difference>" for a
// difference no pattern matches, "in rows at lines 3 and 9: <difference>" for one that patterns of two
// rows match, "stale row at line 3: `<pattern>` matches no difference". Empty: the table is exact.
std::vector<std::string> check_against_table(const std::vector<std::string>& differences,
                                             const std::vector<DifferenceRow>& rows);

}  // namespace gpuctk::test
