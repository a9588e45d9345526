#pragma once
// docker's `docker run --gpus`: when dockerd starts, it looks for an executable named
// nvidia-container-runtime-hook on its PATH (moby's daemon/nvidia_linux.go, exec.LookPath in an init
// function) and, when it finds one, enables --gpus and gives every such container a prestart hook running
// it (`nvidia-container-runtime-hook prestart`). gpuctk answers to that name (src/main.cpp), so a link of
// that name to gpuctk in a directory on dockerd's PATH is all docker needs, as NVIDIA's package puts its
// hook in /usr/bin. gpuctk's package keeps its own link out of PATH
// (<libexecdir>/gpuctk/docker/nvidia-container-runtime-hook), so that it never takes the name from
// NVIDIA's package by being installed; `gpuctk runtime configure --runtime docker` and `gpuctk install
// --runtime docker` make the link on PATH, the operator's choice, and their undo removes it.

#include <string>
#include <string_view>

#include "install/install.hpp"
#include "util/error.hpp"

namespace gpuctk::install {

// The name dockerd looks for.
inline constexpr std::string_view k_docker_hook_name = "nvidia-container-runtime-hook";

// Where the link goes by default: the first directory of the PATH systemd gives docker.service (and
// every service: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin) that a local
// administrator owns, ahead of /usr/bin, where NVIDIA's package puts its hook.
inline constexpr std::string_view k_default_docker_hook_dir = "/usr/local/bin";

struct DockerHook {
  Change change = Change::unchanged;
  std::string line;  // one line for the operator: what was done, or why nothing was
};

// `link` (a path ending in /nvidia-container-runtime-hook) is a symbolic link to `target` afterwards
// (install::put_symlink), unless something else is there: a file, or a link to another binary
// (NVIDIA's hook, say), which is left alone with a line saying so. dry_run: the same answer, nothing
// written. Lines: "docker: linked <link> -> <target> (docker run --gpus, once dockerd restarts)",
// "docker: <link> -> <target> unchanged", "docker: <link> left alone: it is not gpuctk's (<what it is>);
// docker run --gpus runs it". Errors: the link's directory cannot be made or written.
Result<DockerHook> link_docker_hook(const std::string& link, const std::string& target, bool dry_run);

// Removes `link` when it is a symbolic link to `target`; anything else stays. Lines: "docker: removed
// <link>", or "" when there was nothing of gpuctk's to remove.
Result<DockerHook> unlink_docker_hook(const std::string& link, const std::string& target, bool dry_run);

}  // namespace gpuctk::install
