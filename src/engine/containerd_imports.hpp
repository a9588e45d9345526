#pragma once
// containerd's `imports` (containerd_imports.cpp says how containerd reads and merges them), internal to
// src/engine: containerd_sources (engines.hpp) reads the files, these say what they leave in effect.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/toml_doc.hpp"

namespace gpuctk::engine::detail {

// The `imports` of a containerd config; an error when it is not an array of strings.
Result<std::vector<std::string>> containerd_imports(const toml::table& doc);

// An import as containerd resolves it in the file `named_in`: cleaned, and joined to that file's directory
// when relative ("conf.d/*.toml" in /etc/containerd/config.toml: /etc/containerd/conf.d/*.toml); an
// absolute one below `node_root` ("/etc/x.toml" with /host: /host/etc/x.toml; "" or "/": as it is).
std::string import_path(std::string_view import, std::string_view named_in, std::string_view node_root = {});

// Where containerd's runtime `name` and its default runtime name come from once it has read `doc` and
// then `imports` (containerd_sources' order), as its `config dump` shows them: a version 3 `doc` is
// merged key by key (containerd 2.x), an older one plugin table by plugin table (containerd 1.x: a
// later file's CRI plugin table replaces the earlier one whole). `*_from` is the import that set the value
// last ("" when it is `doc`'s, or containerd's default "runc"). Errors name the import.
struct ContainerdEffective {
  std::optional<std::string> binary;  // options.BinaryName of runtime `name` ("" none); nullopt: no runtime
  std::string binary_from;
  std::string default_name;
  std::string default_from;
};
Result<ContainerdEffective> containerd_effective(const toml::table& doc,
                                                 const std::vector<SourceFile>& imports,
                                                 std::string_view name);

}  // namespace gpuctk::engine::detail
