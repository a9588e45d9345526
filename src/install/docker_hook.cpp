#include "install/docker_hook.hpp"

#include <sys/stat.h>

#include "discover/host_fs.hpp"

namespace gpuctk::install {

Result<DockerHook> link_docker_hook(const std::string& link, const std::string& target, bool dry_run) {
  GPUCTK_TRY_ASSIGN(const auto st, discover::lstat_path(link));
  if (st && !(S_ISLNK(st->st_mode) && discover::read_link(link) == target)) {
    return DockerHook{.change = Change::unchanged,
                      .line = "docker: " + link + " left alone: it is not gpuctk's (" +
                              describe_existing(*st, link) + "); docker run --gpus runs it"};
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
