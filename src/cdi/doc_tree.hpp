#pragma once
// The document tree the spec codec decodes from, common to YAML and JSON input. Internal to src/cdi
// (and its tests): mappings keep their members in document order, duplicate keys included, so that the
// decoder can reject duplicates (nlohmann and some YAML readers would drop them silently).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::cdi {

struct DocNode {
  enum class Kind { null, boolean, number, string, plain, list, object };
  Kind kind = Kind::null;
  std::string text;                                  // boolean/number/string/plain: the scalar's text
  std::vector<DocNode> items;                        // list
  std::vector<std::pair<DocNode, DocNode>> members;  // object: key, value
  bool operator==(const DocNode&) const = default;
};

// Spec files nest about 6 levels; anything far deeper is hostile (and would overflow the stack).
inline constexpr size_t k_max_doc_depth = 64;

// Past this many nodes (keys, values, list items; a YAML alias counts as everything it repeats) a
// document is refused before it is built: one device of the usual shape takes about a dozen, so this is
// some 80000 devices. The codec and the canonical fast path count against the same number.
inline constexpr size_t k_max_doc_nodes = 1'000'000;

// A spec file larger than this is refused before it is read (a DGX A100's spec is some 60 KiB).
inline constexpr size_t k_max_spec_bytes = size_t{64} << 20;

// A YAML document through yaml-cpp: quoted scalars are strings, other scalars plain (their YAML 1.1
// meaning is the decoder's business), null words and empty values null.
Result<DocNode> read_yaml_document(std::string_view text);

// The same tree as read_yaml_document, for the one layout gpuctk itself writes (block style, two-space
// indent, "- " items, plain or double-quoted keys, double-quoted strings, plain numbers and booleans,
// "{}" and "[]"), read in a single pass. Nothing when `text` strays from that layout in any way —
// comments, flow collections, anchors, other indents, other escapes — and the caller then uses
// read_yaml_document: the fast path never decides what a document means, it only skips yaml-cpp's
// scanner (90% of a hook run) for the files gpuctk generated.
std::optional<DocNode> read_canonical_yaml(std::string_view text);

}  // namespace gpuctk::cdi
