#pragma once
// What `gpuctk runtime configure` replaced in an engine's config file, so that --remove can put it back
// even after someone else edited the file (then the backup can no longer be restored byte for byte).
// Kept as JSON in the state file `<file>.gpuctk-replaced` (configure.hpp, state_files).
//
// The rules, the same for every engine:
//   - a runtime entry that was not there is "created": --remove deletes it (with everything gpuctk copied
//     into it from the default runtime);
//   - an entry that was there and not gpuctk's is "taken over": the earlier value of every key gpuctk
//     set, added or deleted in it is kept (a string, or "absent"), and --remove puts each one back;
//   - the entry is gpuctk's while its binary key (containerd options.BinaryName, CRI-O runtime_path,
//     docker path) holds the shim path gpuctk wrote. --remove leaves an entry alone that someone pointed
//     elsewhere since, and a configure run that finds it so takes it over afresh;
//   - the default runtime: its earlier value (or "absent") when gpuctk made its runtime the default; put
//     back by --remove while the default still names gpuctk's runtime;
//   - an entry that already holds the shim path when no record names it counts as created (gpuctk before
//     this record existed, or an administrator who wrote gpuctk's entry by hand): --remove deletes it, as
//     it always did.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::engine {

// One key of a runtime entry as it was before gpuctk changed it.
struct ReplacedKey {
  std::vector<std::string> key;    // its path inside the entry: {"options", "BinaryName"}
  std::optional<std::string> was;  // its value; nullopt: the entry had no such key

  bool operator==(const ReplacedKey&) const = default;
};

struct ReplacedRuntime {
  bool created = false;           // gpuctk made the entry
  std::string binary;             // the shim path gpuctk wrote into its binary key
  std::vector<ReplacedKey> keys;  // taken over: what gpuctk changed in it, in the order it did

  bool operator==(const ReplacedRuntime&) const = default;
};

struct ReplacedDefault {
  std::string set;                 // the runtime gpuctk made the default
  std::optional<std::string> was;  // the default before it; nullopt: none was set

  bool operator==(const ReplacedDefault&) const = default;
};

struct Replaced {
  std::map<std::string, ReplacedRuntime> runtimes;  // by runtime name
  std::optional<ReplacedDefault> default_runtime;

  bool empty() const { return runtimes.empty() && !default_runtime; }
  bool operator==(const Replaced&) const = default;
};

// The record from its JSON text. Errors: "not a record of gpuctk's (runtimes.nvidia.binary is a number,
// want a string)", or the JSON parser's message with line and column.
Result<Replaced> parse_replaced(std::string_view text);

// The record as JSON text (4-space indentation, ending with a newline).
std::string print_replaced(const Replaced& replaced);

// configure: what the record says after gpuctk set runtime `name`'s entry, whose binary key now holds
// `binary`. `binary_before`: the binary key's value before (nullopt: the entry was not there); `changed`:
// the keys this run changed in the entry, with their earlier values.
void note_runtime(Replaced& replaced, const std::string& name, const std::string& binary,
                  const std::optional<std::string>& binary_before, std::vector<ReplacedKey> changed);

// configure: what the record says after gpuctk made `name` the default runtime, which was `was` before.
void note_default(Replaced& replaced, const std::string& name, const std::optional<std::string>& was);

// What --remove does with runtime `name`'s entry, whose binary key holds `binary_now`.
enum class RuntimeUndo : uint8_t {
  erase,    // delete the entry: gpuctk made it (or no record names it: gpuctk's entry as always)
  restore,  // put back the keys of the record's `keys`
  leave,    // someone pointed it elsewhere since: not gpuctk's any more
};
RuntimeUndo runtime_undo(const Replaced& replaced, const std::string& name,
                         const std::optional<std::string>& binary_now);

// What --remove puts into the default runtime key that names gpuctk's runtime `name`: the earlier value
// (nullopt: delete the key).
std::optional<std::string> default_undo(const Replaced& replaced, const std::string& name);

// The record without what it says about runtime `name` (after --remove undid it).
Replaced without(Replaced replaced, const std::string& name);

}  // namespace gpuctk::engine
