#pragma once
// gpuctk-mps-control-daemon's work on the host (internal to mps_daemon*.cpp): the folders below the MPS
// root, the shm tmpfs, the control program run without a shell and bounded, its control socket.
//
// The MPS root is a host path from the configuration, but what is below it could have been changed by
// anything that can write there (a workload's container gets its pipe folder read-write): every folder
// below it is made and opened one component at a time from the root's fd with O_NOFOLLOW, so a link put
// in place of a folder is refused ("<path>: a symbolic link, refused"), never followed; the shm tmpfs is
// mounted on the fd of the folder so opened (/proc/self/fd/<n>), and unmounted without following links.

#include <string>
#include <string_view>
#include <vector>

#include "util/child_wait.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::plugin::mps_host {

// The MPS root, made (0755) when it does not exist, opened as a directory without following a link.
Result<UniqueFd> open_root(const std::string& root);

// The folder `components` below `dir` (whose path is `dir_path`, for messages), each component made (0755)
// when missing and opened with O_NOFOLLOW. Errors: "<path>: a symbolic link, refused", "<path>: not a
// directory", or the errno of mkdirat / openat naming the path.
Result<UniqueFd> make_dirs_at(int dir, const std::string& dir_path,
                              const std::vector<std::string>& components);

// Unmounts whatever is mounted on <root>/shm (every layer, without following a link), makes the folder,
// and mounts a tmpfs there: "shm", nosuid, nodev, noexec, relatime, "size=<size>".
Result<void> mount_shm(int root, const std::string& root_path, std::string_view size);

// Unmounts <root>/shm (lazily: a workload's bind of it keeps its own mount). Not mounted: nothing to do.
Result<void> unmount_shm(const std::string& root_path);

// Writes an empty <dir>/<name> (replacing what is there, never through a link); removes it.
Result<void> write_marker(int dir, const std::string& name, const std::string& path);
Result<void> remove_marker(int dir, const std::string& name, const std::string& path);

// The control program: an absolute path (--mps-control-binary) as it is, else the name found on $PATH
// (absolute entries only). Errors: "nvidia-cuda-mps-control: not found in PATH (<PATH>)".
Result<std::string> find_program(const std::string& given, std::string_view name);

// Runs `program args...` with exactly `environment`, no shell, `input` on its stdin (then closed), until
// `deadline` (killed then). Returns what it printed on stdout and stderr (at most `max_output` bytes kept).
// Errors: "<program> <args>: exec: <errno>", "...: still running after <n> s: killed", "...: exit status
// <n>: <output, escaped>".
Result<std::string> run_program(const std::string& program, const std::vector<std::string>& args,
                                const std::vector<std::string>& environment, std::string_view input,
                                Deadline deadline, size_t max_output);

// Whether a control daemon listens on <pipe>/control (a socket, not a link, that accepts a connection).
bool control_listening(int pipe_dir);

// Waits until control_listening is `want` or `deadline` passes; returns whether it became `want`.
bool wait_control(int pipe_dir, bool want, Deadline deadline);

// Reaps every exited child (the control daemons are re-parented here: this process is a subreaper).
void reap_children();

}  // namespace gpuctk::plugin::mps_host
