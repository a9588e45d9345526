// The normaliser and the table of the differential test against NVIDIA's v1.20.0 (cli/spec_differences.hpp):
// it removes representation only (one meaning written two ways gives no difference), every field it
// compares gives exactly one difference when it alone differs, what it cannot read is an error, and the
// table check names every uncovered difference, every doubly covered one and every stale pattern.
#include "cli/spec_differences.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cdi/codec.hpp"

namespace gpuctk::test {
namespace {

cdi::Spec yaml_spec(const std::string& text) {
  auto spec = cdi::parse_spec(text, cdi::Format::yaml);
  EXPECT_TRUE(spec) << (spec ? "" : spec.error().message) << "\n" << text;
  return spec.value_or(cdi::Spec{});
}

std::vector<std::string> diff(const cdi::Spec& nvidia, const cdi::Spec& gpuctk) {
  const auto a = spec_facts(nvidia);
  const auto b = spec_facts(gpuctk);
  EXPECT_TRUE(a) << (a ? "" : a.error().message);
  EXPECT_TRUE(b) << (b ? "" : b.error().message);
  return a && b ? fact_differences(*a, *b) : std::vector<std::string>{"(no facts)"};
}

// A one-device spec whose device has `edits` (YAML at the containerEdits' indentation).
std::string one_device(const std::string& edits) {
  return "cdiVersion: 0.7.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n  containerEdits:\n" + edits;
}

const std::string k_node =
    "    deviceNodes:\n"
    "    - path: /dev/nvidia0\n"
    "      hostPath: /host/dev/nvidia0\n"
    "      type: c\n"
    "      major: 195\n"
    "      minor: 0\n"
    "      fileMode: 438\n"
    "      permissions: rw\n"
    "      uid: 0\n"
    "      gid: 44\n";

TEST(SpecDifferences, OneMinorApartIsExactlyOneDifference) {
  std::string other = k_node;
  other.replace(other.find("minor: 0"), 8, "minor: 1");
  EXPECT_EQ(diff(yaml_spec(one_device(k_node)), yaml_spec(one_device(other))),
            std::vector<std::string>{"device 0 > node /dev/nvidia0 > minor: nvidia [0] gpuctk [1]"});
}

// Each compared field of a node, changed alone, is one difference named by that field.
TEST(SpecDifferences, EveryNodeFieldIsCompared) {
  const std::vector<std::tuple<std::string, std::string, std::string>> changes{
      {"hostPath: /host/dev/nvidia0", "hostPath: /other/dev/nvidia0",
       "hostPath: nvidia [/host/dev/nvidia0] gpuctk [/other/dev/nvidia0]"},
      {"type: c", "type: b", "type: nvidia [c] gpuctk [b]"},
      {"major: 195", "major: 196", "major: nvidia [195] gpuctk [196]"},
      {"fileMode: 438", "fileMode: 432", "fileMode: nvidia [0666] gpuctk [0660]"},
      {"permissions: rw", "permissions: r", "permissions: nvidia [rw] gpuctk [r]"},
      {"uid: 0", "uid: 1", "uid: nvidia [0] gpuctk [1]"},
      {"gid: 44", "gid: 45", "gid: nvidia [44] gpuctk [45]"},
  };
  for (const auto& [from, to, difference] : changes) {
    std::string other = k_node;
    other.replace(other.find(from), from.size(), to);
    EXPECT_EQ(diff(yaml_spec(one_device(k_node)), yaml_spec(one_device(other))),
              std::vector<std::string>{"device 0 > node /dev/nvidia0 > " + difference});
  }
}

// What CDI defines an absent value to be is that value: hostPath, permissions, a minor beside a major.
// A major of 0 or none takes major and minor from the host, whatever the minor says.
TEST(SpecDifferences, AbsentValuesAreWhatCdiMakesOfThem) {
  const std::string implicit =
      "    deviceNodes:\n"
      "    - path: /dev/nvidia0\n"
      "      major: 195\n"
      "    - path: /dev/nvidia-uvm\n"
      "      major: 0\n"
      "      minor: 7\n";
  const std::string explicit_ =
      "    deviceNodes:\n"
      "    - path: /dev/nvidia-uvm\n"
      "      hostPath: /dev/nvidia-uvm\n"
      "    - path: /dev/nvidia0\n"
      "      hostPath: /dev/nvidia0\n"
      "      major: 195\n"
      "      minor: 0\n"
      "      permissions: rwm\n";
  EXPECT_EQ(diff(yaml_spec(one_device(implicit)), yaml_spec(one_device(explicit_))),
            std::vector<std::string>{});
  // An absent type is the host node's: not the same as "c".
  EXPECT_EQ(diff(yaml_spec(one_device(implicit)), yaml_spec(one_device(implicit + "      type: c\n"))),
            std::vector<std::string>{"device 0 > node /dev/nvidia-uvm > type: nvidia [(host)] gpuctk [c]"});
}

// One meaning written NVIDIA's way (a hook per step, mounts and options in another order) and gpuctk's
// (one container-start hook) has only the hook programs' differences.
TEST(SpecDifferences, HookStepsCompareAcrossProcessesAndSpellings) {
  const std::string nvidia = one_device(
      "    mounts:\n"
      "    - hostPath: /h/libcuda.so.1\n"
      "      containerPath: /usr/lib/libcuda.so.1\n"
      "      options: [ro, nosuid, nodev, rbind]\n"
      "    hooks:\n"
      "    - hookName: createContainer\n"
      "      path: /usr/bin/nvidia-cdi-hook\n"
      "      args: [nvidia-cdi-hook, create-symlinks, --link, \"libcuda.so.1::/usr/lib/libcuda.so\"]\n"
      "      env: [NVIDIA_CTK_DEBUG=false]\n"
      "    - hookName: createContainer\n"
      "      path: /usr/bin/nvidia-cdi-hook\n"
      "      args: [nvidia-cdi-hook, enable-cuda-compat, --host-driver-version=535.183.01]\n"
      "      env: [NVIDIA_CTK_DEBUG=false]\n"
      "    - hookName: createContainer\n"
      "      path: /usr/bin/nvidia-cdi-hook\n"
      "      args: [nvidia-cdi-hook, update-ldcache, --folder, /usr/lib, --folder, /usr/lib/vdpau]\n"
      "      env: [NVIDIA_CTK_DEBUG=false]\n"
      "    - hookName: createContainer\n"
      "      path: /usr/bin/nvidia-cdi-hook\n"
      "      args: [nvidia-cdi-hook, disable-device-node-modification]\n"
      "      env: [NVIDIA_CTK_DEBUG=false]\n");
  const std::string gpuctk = one_device(
      "    mounts:\n"
      "    - hostPath: /h/libcuda.so.1\n"
      "      containerPath: /usr/lib/libcuda.so.1\n"
      "      options: [rbind, nodev, nosuid, ro]\n"
      "    hooks:\n"
      "    - hookName: createContainer\n"
      "      path: /usr/bin/nvidia-cdi-hook\n"
      "      args: [gpuctk, hook, container-start, --folder=/usr/lib/vdpau, --link,\n"
      "             \"libcuda.so.1::/usr/lib/libcuda.so\", --host-driver-version, 535.183.01, --folder, "
      "/usr/lib,\n"
      "             --disable-device-node-modification]\n"
      "      env: [GPUCTK_DEBUG=false]\n");
  EXPECT_EQ(
      diff(yaml_spec(nvidia), yaml_spec(gpuctk)),
      (std::vector<std::string>{
          "device 0 > hook program /usr/bin/nvidia-cdi-hook > argv0: nvidia [nvidia-cdi-hook] gpuctk "
          "[gpuctk]",
          "device 0 > hook program /usr/bin/nvidia-cdi-hook > env: nvidia [NVIDIA_CTK_DEBUG=false] gpuctk "
          "[GPUCTK_DEBUG=false]",
      }));
}

TEST(SpecDifferences, HookStepsAreTheTablesStepsAndOptions) {
  const auto steps = [](std::vector<std::string> args) {
    return hook_step_entries(
        cdi::Hook{.hook_name = "createContainer", .path = "/x", .args = std::move(args)});
  };
  const auto ok = steps({"gpuctk", "hook", "container-start", "--link", "a::/b", "--ld-cache-entry",
                         "0x303:0x0:libcuda.so.1:/usr/lib/libcuda.so.1", "--host-driver-version", "1.0",
                         "--host-driver-version", "2.0"});
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(
      *ok,
      (std::vector<std::string>{
          "hook createContainer create-symlinks --link a::/b",
          "hook createContainer enable-cuda-compat --host-driver-version 2.0",
          "hook createContainer update-ldcache --ld-cache-entry 0x303:0x0:libcuda.so.1:/usr/lib/libcuda.so.1",
      }));
  const auto profile = steps({"nvidia-cdi-hook", "update-application-profile"});
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ(*profile, std::vector<std::string>{"hook createContainer update-application-profile"});

  // What it cannot read without guessing.
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused{
      {{"gpuctk", "hook", "container-start", "--frobnicate", "x"},
       "--frobnicate: not an option of container-start"},
      {{"gpuctk", "hook", "create-symlinks", "--folder", "/x"}, "--folder: not an option of create-symlinks"},
      {{"gpuctk", "hook", "update-ldcache", "--folder"}, "--folder: no value"},
      {{"gpuctk", "hook", "container-start", "--disable-device-node-modification=1"},
       "--disable-device-node-modification=1: a flag takes no value"},
      {{"gpuctk", "hook", "update-ldcache", "/x"}, "\"/x\": not a --flag"},
      {{"nvidia-cdi-hook", "update-ldcache", "--folder", "/a,/b"},
       "--folder \"/a,/b\": nvidia-cdi-hook splits list values at commas"},
  };
  for (const auto& [args, message] : refused) {
    const auto r = steps(args);
    ASSERT_FALSE(r) << message;
    EXPECT_TRUE(r.error().message.ends_with(message)) << r.error().message;
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"nvidia-cdi-hook", "frobnicate"}, {"nvidia-cdi-hook", "container-start"}, {"/bin/true"}}) {
    EXPECT_FALSE(steps(args)) << args.front();
  }
}

TEST(SpecDifferences, RefusesWhatItCannotCompare) {
  const std::string twice =
      "    deviceNodes:\n"
      "    - path: /dev/nvidia0\n"
      "    - path: /dev/nvidia0\n"
      "      major: 195\n";
  auto facts = spec_facts(yaml_spec(one_device(twice)));
  ASSERT_FALSE(facts);
  EXPECT_EQ(facts.error().message, "device 0: node /dev/nvidia0: twice");
  const std::string contradicting =
      "    mounts:\n"
      "    - hostPath: /a\n"
      "      containerPath: /a\n"
      "      options: [ro, rw]\n";
  facts = spec_facts(yaml_spec(one_device(contradicting)));
  ASSERT_FALSE(facts);
  EXPECT_EQ(facts.error().message, "device 0: mount /a: options ro and rw together: their order matters");
}

TEST(SpecDifferences, DevicesAndEntriesOnOneSide) {
  const auto a = yaml_spec(one_device("    env: [A=1, B=2]\n    additionalGids: [44]\n"));
  auto b = yaml_spec(one_device("    env: [B=3]\n    additionalGids: [44, 105]\n"));
  b.devices.push_back({"1", {}, b.devices.front().container_edits});
  EXPECT_EQ(diff(a, b), (std::vector<std::string>{
                            "device 0 > env A > only in nvidia",
                            "device 0 > env B > value: nvidia [2] gpuctk [3]",
                            "device 0 > gid 105 > only in gpuctk",
                            "device 1 > only in gpuctk",
                        }));
}

TEST(SpecDifferences, WildcardMatchesAnyRunOnly) {
  EXPECT_TRUE(wildcard_match("a * > x", "a b c > x"));
  EXPECT_TRUE(wildcard_match("*", ""));
  EXPECT_TRUE(wildcard_match("a**b", "ab"));
  EXPECT_TRUE(wildcard_match("device [4] ?", "device [4] ?"));  // brackets and ? are themselves
  EXPECT_FALSE(wildcard_match("device ?", "device 4"));
  EXPECT_FALSE(wildcard_match("a*", "ba"));
  EXPECT_FALSE(wildcard_match("*a", "ab"));
}

const std::string k_table =
    "# Differences\n\n"
    "| other | table |\n|---|---|\n| x | y |\n\n"
    "| pattern | kind | why |\n"
    "|---|---|---|\n"
    "| `h * > device 4 > only in gpuctk` `h * > device 5 > only in gpuctk` | design | MIG-mode GPUs |\n"
    "| `* > env X > only in nvidia` | gap (issue 34) | not yet |\n"
    "| `* > env * > only in nvidia` | design | overlaps the row above |\n"
    "\ntext after\n";

TEST(SpecDifferences, TableCheckNamesEveryProblem) {
  const auto rows = parse_difference_table(k_table);
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 3U);
  EXPECT_EQ((*rows)[0].patterns.size(), 2U);
  EXPECT_EQ((*rows)[1].kind, "gap (issue 34)");
  EXPECT_EQ((*rows)[1].line, 10U);
  // Every pattern used but row 2's: that one is stale.
  EXPECT_EQ(
      check_against_table({"h default > device 4 > only in gpuctk", "h x > device 5 > only in gpuctk",
                           "h default > env Y > only in nvidia"},
                          *rows),
      std::vector<std::string>{"stale row at line 10: `* > env X > only in nvidia` matches no difference"});
  EXPECT_EQ(
      check_against_table({"h default > device 4 > only in gpuctk", "h default > env X > only in nvidia",
                           "h default > env Y > only in nvidia", "h default > device 6 > only in gpuctk",
                           "h default > node /dev/x > only in gpuctk"},
                          *rows),
      (std::vector<std::string>{
          "in rows at lines 10 and 11: h default > env X > only in nvidia",
          "not in the table: h default > device 6 > only in gpuctk",
          "not in the table: h default > node /dev/x > only in gpuctk",
          "stale row at line 9: `h * > device 5 > only in gpuctk` matches no difference",
      }));
}

TEST(SpecDifferences, TableMistakesAreErrors) {
  const std::string header = "| pattern | kind | why |\n|---|---|---|\n";
  const std::vector<std::pair<std::string, std::string>> bad{
      {"| `a` | bug | x |\n",
       "line 3: kind \"bug\" is not one of design, fixture, gap (issue 34), nvidia-bug"},
      {"| a | design | x |\n", "line 3: a pattern cell is `backticked` patterns separated by spaces"},
      {"| `a` | design | |\n", "line 3: no why"},
      {"| `a` | design |\n", "line 3: expected 3 cells (pattern, kind, why), got 2"},
  };
  for (const auto& [row, message] : bad) {
    const auto rows = parse_difference_table(header + row);
    ASSERT_FALSE(rows) << row;
    EXPECT_EQ(rows.error().message, message);
  }
  EXPECT_FALSE(parse_difference_table("| pattern | why |\n|---|---|\n"));
}

}  // namespace
}  // namespace gpuctk::test
