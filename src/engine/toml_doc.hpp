#pragma once
// TOML documents of the engines that use TOML (containerd, CRI-O), through Debian's toml++ (header-only
// here, compiled into the engine files that include this header; no exceptions). Internal to src/engine.
//
// What toml++ does to a file it prints again: every comment is lost (it keeps none), keys come out
// sorted within each table, strings in double quotes, sub-tables indented by 4 spaces, and a table that
// holds only tables gets no header of its own ([plugins]). Values, integer bases and inline tables are
// kept. That is why a file that would not change is never printed again (configure.hpp).

#define TOML_HEADER_ONLY 1
#define TOML_EXCEPTIONS 0
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "engine/engines.hpp"
#include "engine/replaced.hpp"
#include "util/error.hpp"

namespace gpuctk::engine::detail {

// The document in `text`. Errors read "<what toml++ says> at line N, column M".
Result<toml::table> parse_toml(std::string_view text);

// `table` as TOML text (see the top of this file), ending with a newline; "" for an empty table.
std::string print_toml(const toml::table& table);

// `path` + "." + `key`, the key quoted when TOML needs it: plugins."io.containerd.grpc.v1.cri".
std::string key_path(std::string_view path, std::string_view key);

// "a string", "an integer", "a table", ...
std::string_view type_name(const toml::node& node);

// "<path> is <type of node> (want <want>)", with " at line N, column M" when the node came from the file.
Error wrong_type(std::string_view path, const toml::node& node, std::string_view want);

// The table at `key` of `parent`, made when missing; an error (wrong_type) when `key` holds anything else.
// `parent_path` is the key path of `parent` ("" for the document), for the error.
Result<toml::table*> child_table(toml::table& parent, std::string_view key, std::string_view parent_path);

// The table at `key` of `parent`, or nullptr when it is missing or holds anything else (for removal:
// what is not a table holds nothing of gpuctk's).
toml::table* find_table(toml::table& parent, std::string_view key);

// Sets `key` of `table` to the string `value`, or fails (wrong_type) when `key` holds a non-string;
// returns the earlier value ("" when there was none).
Result<std::string> set_string(toml::table& table, std::string_view key, std::string_view value,
                               std::string_view table_path);

// The keys whose values differ between `before` and `after` (a runtime entry before and after gpuctk set
// it), each with its value in `before`, for the record (replaced.hpp): a leaf by its path, a table that
// only `after` has by its own path (absent before). A changed leaf of `before` that is not a string is left
// out: gpuctk only ever replaces strings.
std::vector<ReplacedKey> changed_keys(const toml::table& before, const toml::table& after);

// Puts the recorded keys back into `entry`: a string where there was one, no key where there was none;
// a table that this leaves empty is deleted too.
void restore_keys(toml::table& entry, const std::vector<ReplacedKey>& keys);

// The string at `key` (a path) below `table`; nullopt when there is none or it is no string.
std::optional<std::string> string_at(const toml::table& table, std::span<const std::string_view> key);

// The runtime entries of containerd and CRI-O, for the record of what gpuctk replaced (replaced.hpp).
// `binary_key` is the path of an entry's binary key: options.BinaryName, runtime_path.

// configure: notes in `replaced` that gpuctk set runtime settings.name's entry from `before` (nullptr: there
// was none) to `after`.
void note_entry(Replaced& replaced, const RuntimeSettings& settings, const toml::table* before,
                const toml::table& after, std::span<const std::string_view> binary_key);

// configure: sets the default runtime key `key` of `table` to `name` (an error when it holds another type),
// with the phrase and the record.
Result<void> set_default(toml::table& table, std::string_view key, const std::string& name,
                         std::string_view table_path, Edit& edit);

// --remove: undoes runtime `name` of `runtimes` as `replaced` says (replaced.hpp), with the phrases.
void undo_runtime(toml::table& runtimes, const std::string& name,
                  std::span<const std::string_view> binary_key, const Replaced& replaced, Edit& edit);

// --remove: the default runtime key `key` of `table`, when it names `name`, gets its earlier value back
// (or goes, when there was none or no record says), with the phrase.
void undo_default(toml::table& table, std::string_view key, const std::string& name, const Replaced& replaced,
                  Edit& edit);

}  // namespace gpuctk::engine::detail
