#include "oci/bundle.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "oci/json_text.hpp"
#include "oci/spec_shape.hpp"
#include "util/fd.hpp"
#include "util/file.hpp"
#include "util/path.hpp"

namespace gpuctk::oci {

namespace {

Result<nlohmann::ordered_json> parse_named(std::string_view text, std::string_view name) {
  auto doc = parse_json(text, name, &config_shape());
  if (!doc) {
    return doc;
  }
  if (!doc->is_object()) {
    return fail(std::string(name) + ": the document is " + json_type_phrase(*doc) + ", expected an object");
  }
  return doc;
}

}  // namespace

Result<nlohmann::ordered_json> parse_config(std::string_view text) {
  return parse_named(text, "config.json");
}

std::string dump_config(const nlohmann::ordered_json& config) {
  return config.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string config_path(const std::string& bundle_dir) {
  if (!bundle_dir.empty() && bundle_dir.back() == '/') {
    return bundle_dir + "config.json";
  }
  return bundle_dir + "/config.json";
}

Result<nlohmann::ordered_json> read_config_file(const std::string& path) {
  auto text = read_file_nofollow(path, k_max_config_size);
  if (!text) {
    // O_NOFOLLOW's ELOOP ("Too many levels of symbolic links"); say what it means here.
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return fail("read " + path + ": is a symbolic link, refused (bundle files are never followed)");
    }
    return std::unexpected(std::move(text).error());
  }
  return parse_named(*text, path);
}

Result<void> write_config_file(const std::string& path, const nlohmann::ordered_json& config) {
  // The file being replaced, looked at without following a link and without opening its content.
  mode_t mode = k_new_config_mode;
  std::optional<FileOwner> owner;
  if (UniqueFd old(::open(path.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC)); old) {
    struct stat st {};
    if (::fstat(old.get(), &st) != 0) {
      return fail_errno("write " + path, errno);
    }
    if (S_ISLNK(st.st_mode)) {
      return fail("write " + path + ": is a symbolic link, refused (bundle files are never followed)");
    }
    if (!S_ISREG(st.st_mode)) {
      return fail("write " + path + ": not a regular file");
    }
    // Permission bits only: root does not hand out set-id bits on a file it gives away.
    mode = st.st_mode & 0777;
    // Only root can give the file back to another owner, and only root replaces other users' bundles.
    if (::geteuid() == 0 && (st.st_uid != ::geteuid() || st.st_gid != ::getegid())) {
      owner = FileOwner{st.st_uid, st.st_gid};
    }
  } else if (errno != ENOENT) {
    return fail_errno("write " + path, errno);
  }
  return write_file_atomic(path, dump_config(config), mode, Durability::atomic_only, owner);
}

Result<nlohmann::ordered_json> read_config(const std::string& bundle_dir) {
  return read_config_file(config_path(bundle_dir));
}

Result<void> write_config(const std::string& bundle_dir, const nlohmann::ordered_json& config) {
  return write_config_file(config_path(bundle_dir), config);
}

Result<std::string> rootfs_path(const nlohmann::ordered_json& config, const std::string& bundle_dir) {
  const auto root = config.find("root");
  if (root == config.end() || root->is_null()) {
    return fail("config.json: root.path is missing");
  }
  if (!root->is_object()) {
    return fail("config.json: root is " + json_type_phrase(*root) + ", expected an object");
  }
  const auto path = root->find("path");
  if (path == root->end() || path->is_null()) {
    return fail("config.json: root.path is missing");
  }
  if (!path->is_string()) {
    return fail("config.json: root.path is " + json_type_phrase(*path) + ", expected a string");
  }
  if (path->get_ref<const std::string&>().empty()) {
    return fail("config.json: root.path is empty");
  }
  return clean_absolute_path(path->get_ref<const std::string&>(), bundle_dir);
}

}  // namespace gpuctk::oci
