#include "plugin/mps.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <string>

#include "util/path.hpp"

namespace gpuctk::plugin {

namespace {

// The control daemon's socket in its pipe folder (nvidia-cuda-mps-control names it so).
constexpr std::string_view k_control_socket = "control";

std::string below(std::string_view root, std::string_view resource, std::string_view leaf) {
  return clean_path(std::string(root) + "/" + std::string(resource) + "/" + std::string(leaf));
}

}  // namespace

std::string mps_resource_dir(std::string_view root, std::string_view resource) {
  return clean_path(std::string(root) + "/" + std::string(resource));
}

std::string mps_pipe_dir(std::string_view root, std::string_view resource) {
  return below(root, resource, "pipe");
}

std::string mps_log_dir(std::string_view root, std::string_view resource) {
  return below(root, resource, "log");
}

std::string mps_ready_file(std::string_view root, std::string_view resource) {
  return below(root, resource, ".ready");
}

std::string mps_shm_dir(std::string_view root) {
  return clean_path(std::string(root) + "/shm");
}

Result<void> mps_ready(std::string_view root, std::string_view resource) {
  struct stat st {};
  const auto ready = mps_ready_file(root, resource);
  if (::lstat(ready.c_str(), &st) != 0) {
    return fail_errno(ready, errno);
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(ready + ": not a regular file");
  }
  const auto control = mps_pipe_dir(root, resource) + "/" + std::string(k_control_socket);
  if (::lstat(control.c_str(), &st) != 0) {
    return fail_errno(control, errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return fail(control + ": not a socket");
  }
  return {};
}

}  // namespace gpuctk::plugin
