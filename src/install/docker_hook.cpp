#include "install/docker_hook.hpp"

#include <sys/stat.h>

#include "discover/host_fs.hpp"

namespace gpuctk::install {

namespace {

// What is at `link` when it is not gpuctk's link: "a regular file", "a link to /usr/bin/x".
std::string describe(const struct stat& st, const std::string& link) {
  if (S_ISLNK(st.st_mode)) {
    return "a link to " + discover::read_link(link).value_or("?");
  }
  return S_ISDIR(st.st_mode) ? "a directory" : S_ISREG(st.st_mode) ? "a regular file" : "a special file";
}

}  // namespace

Result<DockerHook> link_docker_hook(const std::string& link, const std::string& target, bool dry_run) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(link));
  if (st && !(S_ISLNK(st->st_mode) && discover::read_link(link) == target)) {
    return DockerHook{.change = Change::unchanged,
                      .line = "docker: " + link + " left alone: it is not gpuctk's (" + describe(*st, link) +
                              "); docker run --gpus runs it"};
  }
  if (st) {
    return DockerHook{.change = Change::unchanged,
                      .line = "docker: " + link + " -> " + target + " unchanged"};
  }
  if (!dry_run) {
    GPUCTK_TRY(put_symlink(target, link));
  }
  return DockerHook{
      .change = Change::changed,
      .line = "docker: linked " + link + " -> " + target + " (docker run --gpus, once dockerd restarts)"};
}

Result<DockerHook> unlink_docker_hook(const std::string& link, const std::string& target, bool dry_run) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(link));
  if (!st || !S_ISLNK(st->st_mode) || discover::read_link(link) != target) {
    return DockerHook{};
  }
  if (!dry_run) {
    GPUCTK_TRY(remove_symlink_if(link, target));
  }
  return DockerHook{.change = Change::changed, .line = "docker: removed " + link};
}

}  // namespace gpuctk::install
