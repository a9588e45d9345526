// gpuctk's `cdi generate` against nvidia-ctk v1.20.0's on the same fixture hosts (tests/data/
// nvidia-v1.20-specs, README there), entry by entry after cli/spec_differences.hpp's normalisation: every
// difference must be a row of tests/data/nvidia-v1.20-specs/differences.md, and every row's pattern must
// still match a difference. A failure lists each difference no row explains, and each stale pattern, on a
// line of its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cdi/codec.hpp"
#include "cli/run_gpuctk.hpp"
#include "cli/spec_differences.hpp"
#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk {
namespace {

const std::string k_data = std::string(GPUCTK_SOURCE_DIR) + "/tests/data/nvidia-v1.20-specs/";

// `text` with every `from` replaced by `to`.
std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// One spec pair: NVIDIA's file and the options it was made with, as gpuctk takes them.
struct Variant {
  const char* name;                   // "default": the file <host>.<name>.yaml, and the keys' prefix
  std::vector<std::string> gpuctk{};  // gpuctk's options beside the roots and the hook path
};
const Variant k_variants[] = {
    {"default"},
    {"no-additional-gids", {"--feature-flag", "no-additional-gids-for-device-nodes"}},
};

// The differences of one host and variant, "<host> <variant> > <difference>", the materialised root
// written as @HOST_ROOT@ (as NVIDIA's files write it).
std::vector<std::string> differences(const fixture::Fixture& f, const std::string& host,
                                     const Variant& variant) {
  const std::string& root = f.host.root;
  const std::string label = host + " " + variant.name;
  const std::string file = k_data + host + "." + variant.name + ".yaml";
  auto text = read_file(file);
  EXPECT_TRUE(text) << file << ": " << (text ? "" : text.error().message);
  auto nvidia = cdi::parse_spec(replace_all(text.value_or(""), "@HOST_ROOT@", root), cdi::Format::yaml);
  EXPECT_TRUE(nvidia) << file << ": " << (nvidia ? "" : nvidia.error().message);

  const std::string scratch = f.temp.path() + "/scratch";
  std::vector<std::string> args{"cdi",        "generate",      "--driver-root", f.host.driver_root,
                                "--dev-root", f.host.dev_root, "--hook-path",   "/usr/bin/nvidia-cdi-hook"};
  args.insert(args.end(), variant.gpuctk.begin(), variant.gpuctk.end());
  const auto r = test::run_gpuctk(args, scratch);
  EXPECT_EQ(r.exit_code, 0) << label << ": " << r.err;
  auto gpuctk = cdi::parse_spec(r.out, cdi::Format::yaml);
  EXPECT_TRUE(gpuctk) << label << ": " << (gpuctk ? "" : gpuctk.error().message);
  if (!nvidia || !gpuctk) {
    return {};
  }

  const auto nvidia_facts = test::spec_facts(*nvidia);
  const auto gpuctk_facts = test::spec_facts(*gpuctk);
  EXPECT_TRUE(nvidia_facts) << file << ": " << (nvidia_facts ? "" : nvidia_facts.error().message);
  EXPECT_TRUE(gpuctk_facts) << label << ": " << (gpuctk_facts ? "" : gpuctk_facts.error().message);
  if (!nvidia_facts || !gpuctk_facts) {
    return {};
  }
  std::vector<std::string> out;
  for (const auto& difference : test::fact_differences(*nvidia_facts, *gpuctk_facts)) {
    out.push_back(label + " > " + replace_all(difference, root, "@HOST_ROOT@"));
  }
  return out;
}

// Both hosts, both variants, against the one table: a row is stale only when no pair has its difference.
TEST(NvidiaV120Differential, EveryDifferenceIsATableRowAndEveryRowADifference) {
  std::vector<std::string> all;
  for (const std::string host : {"dgx-a100", "t4-debian"}) {
    const auto f = test::host_with_real_nodes(host);
    if (!f) {
      return;
    }
    std::filesystem::create_directories(f->temp.path() + "/scratch");
    for (const auto& variant : k_variants) {
      const auto found = differences(*f, host, variant);
      all.insert(all.end(), found.begin(), found.end());
    }
  }
  ASSERT_FALSE(HasFailure());
  const std::string table_file = k_data + "differences.md";
  const auto table = test::parse_difference_table(read_file(table_file).value_or(""));
  ASSERT_TRUE(table) << table_file << ": " << table.error().message;
  const auto problems = test::check_against_table(all, *table);
  EXPECT_TRUE(problems.empty()) << problems.size() << " problems with " << table_file << " (" << all.size()
                                << " differences, " << table->size() << " rows):\n"
                                << join(problems, "\n");
}

}  // namespace
}  // namespace gpuctk
