#pragma once
// An OCI bundle's config.json: parse, dump, read, write atomically, and where the rootfs is.
//
// The config is held as nlohmann::ordered_json, so the keys gpuctk does not own come back in their
// order and with their values (see oci/json_text.hpp for numbers).
//
// dump_config writes compact single-line JSON without a trailing newline, as runc's libcontainer,
// containerd and podman write config.json (Go's json.Marshal); runtimes do not care about layout,
// and compact is the cheapest to write and read on the container-create path.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace gpuctk::oci {

// The largest config.json gpuctk reads (16 MiB). Real ones are 2-30 KB; the cap keeps a hostile bundle
// from making gpuctk read (and, as a JSON DOM, hold ten times) an unbounded file.
inline constexpr size_t k_max_config_size = 16 << 20;

// The mode of a config.json gpuctk creates (write_config keeps the mode of an existing file).
// runc `spec` writes 0666 & ~umask (0644), but process.env may hold secrets, so a new file is
// readable by its owner only.
inline constexpr unsigned k_new_config_mode = 0600;

// The config in `text`; it must be a JSON object, read as runc reads it (parse_json with config_shape():
// no duplicate keys, no case variants of OCI fields, at most k_max_json_depth levels). Errors:
//   config.json: syntax error while parsing object key - ...; expected string literal at line 1, column 2
//   config.json: duplicate key "root" at line 1, column 39
//   config.json: key "Process" is read by runc as the OCI field "process" (Go ignores case in keys) at ...
//   config.json: nesting deeper than 128 levels at line 1, column 129
//   config.json: the document is an array, expected an object
Result<nlohmann::ordered_json> parse_config(std::string_view text);

// `config` as compact JSON (no trailing newline). Invalid UTF-8 in a string is written as U+FFFD.
std::string dump_config(const nlohmann::ordered_json& config);

// "<bundle_dir>/config.json".
std::string config_path(const std::string& bundle_dir);

// The config at `path`. Whoever can write the bundle directory can put anything there, so the file is
// opened with O_NOFOLLOW | O_NONBLOCK and must be a regular file of at most k_max_config_size bytes:
// a symlink is refused, never followed (its target, e.g. a host file, is never read or echoed in an
// error). Errors name the path:
//   read /b/config.json: No such file or directory
//   read /b/config.json: is a symbolic link, refused (bundle files are never followed)
//   read /b/config.json: not a regular file
//   read /b/config.json: larger than 16777216 bytes
//   /b/config.json: syntax error ... at line 4, column 1
Result<nlohmann::ordered_json> read_config_file(const std::string& path);

// Replaces `path` with `config` atomically and without fsync (a bundle does not outlive the boot, and
// this is on every container start): write_file_atomic(Durability::atomic_only). An existing file must
// be a regular file, looked at through an O_PATH | O_NOFOLLOW fd (a symlink is refused, never followed);
// the new file keeps its permission bits and, when we run as root, its owner and group, set on the
// temporary file's fd before the rename - nothing is ever chowned by path. A new file gets
// k_new_config_mode. Errors name the path ("write /b/config.json: ..."); on error the old file is
// untouched and no temporary file is left.
Result<void> write_config_file(const std::string& path, const nlohmann::ordered_json& config);

// read_config_file / write_config_file of config_path(bundle_dir).
Result<nlohmann::ordered_json> read_config(const std::string& bundle_dir);
Result<void> write_config(const std::string& bundle_dir, const nlohmann::ordered_json& config);

// The container's root filesystem on the host: `root.path`, made absolute against `bundle_dir` when
// relative (as runc does), lexically cleaned ("/b/./rootfs/" -> "/b/rootfs"). An error when
// `root.path` is missing, not a string or empty ("config.json: root.path is missing"); a caller
// must never fall back to a host path.
Result<std::string> rootfs_path(const nlohmann::ordered_json& config, const std::string& bundle_dir);

}  // namespace gpuctk::oci
