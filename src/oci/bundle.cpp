#include "oci/bundle.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "oci/json_text.hpp"
#include "util/file.hpp"
#include "util/path.hpp"

namespace gpuctk::oci {

namespace {

Result<nlohmann::ordered_json> parse_named(std::string_view text, std::string_view name) {
  auto doc = parse_json(text, name);
  if (!doc) {
    return doc;
  }
  if (!doc->is_object()) {
    return fail(std::string(name) + ": the document is " + json_type_phrase(*doc) + ", expected an object");
  }
  return doc;
}

}  // namespace

Result<nlohmann::ordered_json> parse_config(std::string_view text) { return parse_named(text, "config.json"); }

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
  const auto text = read_file(path);
  if (!text) {
    return std::unexpected(text.error());
  }
  return parse_named(*text, path);
}

Result<void> write_config_file(const std::string& path, const nlohmann::ordered_json& config) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) {
    return fail_errno("stat " + path, errno);
  }
  const mode_t mode = exists ? (st.st_mode & 07777) : static_cast<mode_t>(k_new_config_mode);
  if (auto written = write_file_atomic(path, dump_config(config), mode); !written) {
    return written;
  }
  // The new file belongs to us; give it back to the old owner (only root can, and only root
  // replaces other users' bundles). The content is already in place, so this cannot lose data.
  if (exists && ::geteuid() == 0 && (st.st_uid != ::geteuid() || st.st_gid != ::getegid())) {
    if (::chown(path.c_str(), st.st_uid, st.st_gid) != 0) {
      return fail_errno("chown " + path, errno);
    }
  }
  return {};
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
