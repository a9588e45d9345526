#pragma once
// gpuctk-dra-plugin's checkpoint: the claims it prepared, so that a restarted plugin answers the kubelet's
// NodePrepareResources the same and can still unprepare them (NVIDIA's driver keeps the same record,
// cmd/gpu-kubelet-plugin/checkpoint.go, in the kubelet's checkpoint format). One JSON file:
//   {"checksum": "<16 hex digits>", "claims": {"<uid>": {"namespace": "...", "name": "...",
//    "devices": [{"requests": [...], "pool": "...", "device": "...", "cdiIds": [...]}]}}, "version": 1}
// The checksum is FNV-1a 64 of the file's JSON without it (keys sorted, no spaces), as the kubelet's
// checkpoints carry one: a file cut short or edited by hand is refused, never read as fewer claims.
// Written whole after every change (temporary file, fsync, rename); a prepared claim is never dropped
// silently, so every problem reading it is an error the daemon stops on.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::dra {

inline constexpr std::string_view k_default_checkpoint_path =
    "/var/lib/kubelet/plugins/gpu.nvidia.com/checkpoint.json";
// The format written; a file of another version is refused (a downgrade must not misread a newer file).
inline constexpr int k_checkpoint_version = 1;
// The largest checkpoint read or written: 32 devices per claim take about 4 KiB, so this is room for a
// thousand claims, far more than a node runs.
inline constexpr size_t k_max_checkpoint_bytes = size_t{4} << 20U;

// One prepared device, as the kubelet is answered (its Device message): the claim's requests that got it,
// its pool and DRA name, the CDI ids the runtime injects.
struct PreparedDevice {
  std::vector<std::string> requests;
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_ids;
  bool operator==(const PreparedDevice&) const = default;
};

struct PreparedClaim {
  std::string namespace_name;
  std::string name;
  std::vector<PreparedDevice> devices;
  bool operator==(const PreparedClaim&) const = default;
};

struct Checkpoint {
  std::map<std::string, PreparedClaim> claims;  // by claim UID
  bool operator==(const Checkpoint&) const = default;
};

// `checkpoint` as the file holds it (version, checksum), ending with a newline. Deterministic.
std::string encode_checkpoint(const Checkpoint& checkpoint);

// The checkpoint in `text`. Errors, one line each:
//   not JSON: <parser's message>
//   checkpoint version 2, not 1 (written by another gpuctk-dra-plugin)
//   checksum mismatch (the file was changed or cut short)
//   claims["x"]: claim uid "x" is not a UID (want 8-4-4-4-12 hexadecimal digits)
//   claims["<uid>"].devices[0].pool: expected a string
Result<Checkpoint> parse_checkpoint(std::string_view text);

// The checkpoint at `path`: empty when there is no file; else read from a regular file only (a link is
// followed), at most k_max_checkpoint_bytes, and parsed. Errors name the path:
// "/var/lib/.../checkpoint.json: checksum mismatch (...)", "read /x: not a regular file".
Result<Checkpoint> read_checkpoint(const std::string& path);

// Replaces the file at `path` with `checkpoint` (write_file_atomic, durable, mode 0600). Its directory
// must exist (the daemon makes its plugin directory, where its socket is). Refused beyond
// k_max_checkpoint_bytes, so that what is written can be read again: "write /x: checkpoint of N bytes, more
// than 4194304".
Result<void> write_checkpoint(const std::string& path, const Checkpoint& checkpoint);

}  // namespace gpuctk::dra
