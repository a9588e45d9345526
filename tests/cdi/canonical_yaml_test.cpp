// The canonical-layout YAML fast path against yaml-cpp: on every document it accepts it must build the
// very tree yaml-cpp builds; everything else it must hand back (nothing), and the codec then still
// reads the document through yaml-cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "cdi/codec.hpp"
#include "cdi/doc_tree.hpp"
#include "cdi/yaml_scalars.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {
namespace {

// Asserts that the fast path accepts `text` and agrees with yaml-cpp.
void expect_same_tree(const std::string& text, const std::string& what) {
  const auto fast = read_canonical_yaml(text);
  ASSERT_TRUE(fast.has_value()) << what << ": the fast path refused a document gpuctk wrote";
  const auto slow = read_yaml_document(text);
  ASSERT_TRUE(slow) << what << ": " << slow.error().message;
  EXPECT_TRUE(*fast == *slow) << what << ": the fast path and yaml-cpp built different trees";
}

TEST(CanonicalYaml, GoldenSpecsTakeTheFastPathAndMatchYamlCpp) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(GPUCTK_SOURCE_DIR) + "/tests/golden")) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    const auto text = read_file(entry.path().string());
    ASSERT_TRUE(text) << text.error().message;
    expect_same_tree(*text, entry.path().filename().string());
    ++files;
  }
  EXPECT_GE(files, 8);
}

// A spec using every field kind, with strings that need every escape the writer knows.
Spec awkward_spec() {
  std::string all_bytes;
  for (int c = 1; c < 256; ++c) {
    all_bytes.push_back(static_cast<char>(c));
  }
  Spec spec;
  spec.cdi_version = "1.1.0";
  spec.kind = "example.com/gpu";
  spec.annotations = {{"plain", "v"},
                      {"with space", "a \"quoted\" \\ back"},
                      {"true", "yes"},
                      {"123", "0x1F"},
                      {"", "empty key"},
                      {"bytes", all_bytes},
                      {"unicode \u2028\u2029\ufeff\u0085 é 日本 😀", "\t\n\r\x1b"},
                      {"- dash", "# hash: colon {brace} [bracket] & * ! | > ' %"}};
  Device device;
  device.name = "0";
  device.annotations = {{"k", "- not a list"}};
  device.container_edits.env = {"A=1", "B= spaced ", "C=\"q\"", "D=multi\nline"};
  device.container_edits.device_nodes = {DeviceNode{
      .path = "/dev/nvidia0", .type = "c", .major = 195, .minor = -1, .file_mode = 0666, .uid = 0}};
  device.container_edits.mounts = {
      Mount{.host_path = "/a b", .container_path = "/c", .options = {"ro", "rbind"}}};
  device.container_edits.hooks = {Hook{.hook_name = "createContainer",
                                       .path = "/usr/bin/gpuctk",
                                       .args = {"gpuctk", "hook", "--x=\\y"},
                                       .env = {"PATH=/bin"},
                                       .timeout = 5}};
  device.container_edits.intel_rdt =
      IntelRdt{.clos_id = "c", .schemata = std::vector<std::string>{}, .enable_cmt = true};
  device.container_edits.additional_gids = {44, 0, 4294967295u};
  device.container_edits.net_devices = {NetDevice{.host_interface_name = "eth0", .name = "net0"}};
  spec.devices = {device, Device{.name = "all", .container_edits = {.env = {"X=y"}}}};
  spec.container_edits.env = {"NVIDIA_VISIBLE_DEVICES=void"};
  spec.container_edits.intel_rdt = IntelRdt{};
  return spec;
}

TEST(CanonicalYaml, EveryEscapeTheWriterUsesMatchesYamlCpp) {
  const auto spec = awkward_spec();
  const auto text = write_spec(spec, Format::yaml);
  expect_same_tree(text, "awkward spec");
  // And the whole codec reads back what it wrote (the fast path feeds the same decoder).
  const auto back = parse_spec(text, Format::yaml);
  ASSERT_TRUE(back) << back.error().message;
  auto expected = spec;
  // The writer replaces invalid UTF-8 with U+FFFD; compare against what was actually written.
  const auto reread = parse_spec(write_spec(*back, Format::yaml), Format::yaml);
  ASSERT_TRUE(reread) << reread.error().message;
  EXPECT_EQ(*reread, *back);
  EXPECT_EQ(back->devices[0].container_edits, expected.devices[0].container_edits);
}

TEST(CanonicalYaml, YamlAndJsonWritersSayTheSame) {
  const auto spec = awkward_spec();
  const auto from_yaml = parse_spec(write_spec(spec, Format::yaml), Format::yaml);
  const auto from_json = parse_spec(write_spec(spec, Format::json), Format::json);
  ASSERT_TRUE(from_yaml) << from_yaml.error().message;
  ASSERT_TRUE(from_json) << from_json.error().message;
  EXPECT_EQ(*from_yaml, *from_json);
}

// Documents in other layouts: the fast path declines, the codec still reads them through yaml-cpp.
TEST(CanonicalYaml, OtherLayoutsFallBackToYamlCpp) {
  const std::vector<std::pair<std::string, std::string>> documents = {
      {"no document marker", "cdiVersion: \"0.5.0\"\nkind: \"a.com/b\"\n"},
      {"comment", "---\n# generated\ncdiVersion: \"0.5.0\"\nkind: \"a.com/b\"\n"},
      {"trailing comment", "---\ncdiVersion: \"0.5.0\" # v\nkind: \"a.com/b\"\n"},
      {"unquoted string", "---\ncdiVersion: 0.5.0\nkind: a.com/b\n"},
      {"single quotes", "---\ncdiVersion: '0.5.0'\nkind: 'a.com/b'\n"},
      {"four-space indent",
       "---\ncdiVersion: \"0.5.0\"\nkind: \"a.com/b\"\ncontainerEdits:\n    env:\n    - \"A=1\"\n"},
      {"list at key indent",
       "---\ncdiVersion: \"0.5.0\"\nkind: \"a.com/b\"\ncontainerEdits:\n  env:\n  - \"A=1\"\n"},
      {"flow list", "---\ncdiVersion: \"0.5.0\"\nkind: \"a.com/b\"\ncontainerEdits:\n  env: [\"A=1\"]\n"},
      {"trailing space", "---\ncdiVersion: \"0.5.0\" \nkind: \"a.com/b\"\n"},
      {"CRLF", "---\r\ncdiVersion: \"0.5.0\"\r\nkind: \"a.com/b\"\r\n"},
      {"anchor and alias",
       "---\ncdiVersion: \"0.5.0\"\nkind: \"a.com/b\"\ncontainerEdits:\n  env:\n    - &e \"A=1\"\ndevices:\n "
       " - name: \"x\"\n"
       "    containerEdits:\n      env:\n        - *e\n"},
      {"blank line", "---\ncdiVersion: \"0.5.0\"\n\nkind: \"a.com/b\"\n"},
      {"other escape",
       "---\ncdiVersion: \"0.5.0\"\nkind: \"a.com/\\x62\"\ncontainerEdits:\n  env:\n    - \"A=\\e\"\n"},
  };
  for (const auto& [what, text] : documents) {
    EXPECT_FALSE(read_canonical_yaml(text).has_value()) << what;
    const auto spec = parse_spec(text, Format::yaml);
    EXPECT_TRUE(spec) << what << ": " << (spec ? "" : spec.error().message);
    if (spec) {
      EXPECT_EQ(spec->kind, "a.com/b") << what;
    }
  }
}

TEST(CanonicalYaml, MalformedDocumentsAreNeverAccepted) {
  for (const std::string text : {"", "---\n", "---\nkind\n", "---\nkind: \"x\n", "---\n  kind: \"x\"\n",
                                 "---\nkind: \"x\"\n  other: 1\n", "---\nkind: -\n", "---\n- \n",
                                 "---\nkind:\nother: 1\n", "---\nkind: \"a\"\"b\"\n",
                                 "---\nkind: \"\\u12\"\n", "---\nkind: \"\\uD800\"\n", "---\nkind: a:b\n"}) {
    EXPECT_FALSE(read_canonical_yaml(text).has_value()) << quote(text);
  }
}

TEST(CanonicalYaml, NullWordsAreNullAsInYamlCpp) {
  expect_same_tree("---\na: null\nb: Null\nc: NULL\nnull: 1\nd: true\ne: -1\nf: .5\n", "null words");
  const auto tree = read_canonical_yaml("---\na: null\n");
  ASSERT_TRUE(tree);
  EXPECT_EQ(tree->members.at(0).second.kind, DocNode::Kind::null);
}

TEST(CanonicalYaml, DeepNestingIsRefused) {
  std::string text = "---\n";
  for (size_t depth = 0; depth < k_max_doc_depth + 2; ++depth) {
    text += std::string(2 * depth, ' ') + "k:\n";
  }
  text += std::string(2 * (k_max_doc_depth + 2), ' ') + "v: 1\n";
  EXPECT_FALSE(read_canonical_yaml(text).has_value());
}

// Random edits of a generated spec: whenever the fast path still accepts the text, yaml-cpp must read
// it too and build the same tree. Deterministic (fixed seed), so a failure reproduces.
TEST(CanonicalYaml, MutatedDocumentsAgreeWithYamlCppWheneverAccepted) {
  const std::string base = write_spec(awkward_spec(), Format::yaml);
  constexpr std::string_view k_alphabet = " -:\"\\#\n\tab1{}[]&*!|>'.,?%@`~";
  std::mt19937 random(20261122);
  const auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(random); };
  int accepted = 0;
  int refused = 0;
  for (int round = 0; round < 1500; ++round) {
    std::string text = base;
    const size_t edits = 1 + pick(3);
    for (size_t e = 0; e < edits; ++e) {
      const size_t at = pick(text.size());
      switch (pick(4)) {
        case 0:
          text.erase(at, 1);
          break;
        case 1:
          text.insert(at, 1, k_alphabet[pick(k_alphabet.size())]);
          break;
        case 2:
          text[at] = k_alphabet[pick(k_alphabet.size())];
          break;
        default: {  // repeat a line
          const size_t start = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
          const size_t end = text.find('\n', at);
          if (end != std::string::npos) {
            text.insert(start, text.substr(start, end - start + 1));
          }
        }
      }
    }
    if (!check_yaml_text(text)) {
      continue;
    }
    const auto fast = read_canonical_yaml(text);
    if (!fast) {
      ++refused;
      continue;
    }
    ++accepted;
    const auto slow = read_yaml_document(text);
    ASSERT_TRUE(slow) << "round " << round << ": the fast path accepted what yaml-cpp rejects ("
                      << slow.error().message << "):\n"
                      << text;
    ASSERT_TRUE(*fast == *slow) << "round " << round << ": different trees for:\n" << text;
  }
  // Both outcomes must occur, or the test proves nothing.
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 100);
}

}  // namespace
}  // namespace gpuctk::cdi
