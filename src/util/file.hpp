#pragma once
// Whole-file reads and atomic whole-file writes.

#include <sys/mman.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk {

// The bytes of `path`, at most `max_size` of them. Errors name the path: "read /x: No such file or
// directory", "read /x: larger than N bytes".
Result<std::string> read_file(const std::string& path, size_t max_size = SIZE_MAX);

// A read-only private mapping of the first `size` bytes of the file `fd`, unmapped on destruction;
// ok() is false (errno set by mmap) when the mapping failed.
class ReadOnlyMapping {
 public:
  ReadOnlyMapping(int fd, size_t size) : m_size(size) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    m_data = p == MAP_FAILED ? nullptr : p;
  }
  ReadOnlyMapping(const ReadOnlyMapping&) = delete;
  ReadOnlyMapping& operator=(const ReadOnlyMapping&) = delete;
  ~ReadOnlyMapping() {
    if (m_data != nullptr) {
      ::munmap(m_data, m_size);
    }
  }
  [[nodiscard]] bool ok() const { return m_data != nullptr; }
  [[nodiscard]] std::string_view bytes() const { return {static_cast<const char*>(m_data), m_size}; }

 private:
  void* m_data = nullptr;
  size_t m_size = 0;
};

// Everything readable from `fd`, at most `max_size` bytes ("read <what>: larger than N bytes" beyond).
Result<std::string> read_fd(int fd, const std::string& what, size_t max_size);

// Writes all of `data` to `fd`, retrying short writes and EINTR. Returns 0, or the errno of the failure.
int write_all(int fd, std::string_view data);

// The bytes of the regular file `path`, at most `max_size` of them. For files in directories others can
// write (bundles): looked up with O_PATH | O_NOFOLLOW and checked with fstat, then opened through that fd
// only when it is a regular file (reopen_regular): a symlink as the last component is never followed, and
// a FIFO or device node there is never opened. Errors: "read /b/config.json: Too many levels of symbolic
// links" (a link, as O_NOFOLLOW says), "read /b/config.json: not a regular file" (a FIFO, a device, a
// socket), "read /b/config.json: larger than 16777216 bytes", "read /b/config.json: No such file or
// directory".
Result<std::string> read_file_nofollow(const std::string& path, size_t max_size);

// The regular file `name` of the directory fd `dir` (AT_FDCWD: the working directory; an absolute name
// ignores `dir`), links followed, at most `max_size` bytes; nullopt when nothing is there (ENOENT). As
// read_file_nofollow, looked up with O_PATH and opened only when it is a regular file: a FIFO or device
// node named there is refused, never opened. Errors name it `path`: "read P: not a regular file",
// "read P: larger than N bytes", "read P: <errno text>".
Result<std::optional<std::string>> read_regular_at(int dir, const char* name, const std::string& path,
                                                   size_t max_size);

// An fd for the file that the O_PATH fd `path_fd` names, opened again with `flags` (O_NONBLOCK, O_NOCTTY
// and O_CLOEXEC added) through /proc/self/fd only when it is a regular file: the file opened is the one
// whose type was checked on `path_fd`, never a name looked up again. Anything else is never opened: a
// device node's open can have effects (a watchdog armed without its magic close reboots the node), a
// FIFO's can block. Errors: "<what>: not a regular file", "<what>: <errno text>".
Result<UniqueFd> reopen_regular(int path_fd, int flags, const std::string& what);

// reopen_regular of `name` (one component) in the directory fd `dir`, looked up with O_PATH | O_NOFOLLOW
// (a symlink there is "not a regular file" too) and opened O_RDONLY.
Result<UniqueFd> open_regular_at(int dir, const std::string& name, const std::string& what);

// read_file(path) given to `parse` (a function of the text returning a Result); a parse error is
// prefixed with the path: "/proc/driver/nvidia/version: no version line".
template <class Parse>
auto read_parsed(const std::string& path, Parse&& parse) -> decltype(parse(std::string_view{})) {
  GPUCTK_TRY_ASSIGN(auto text, read_file(path));
  auto parsed = parse(std::string_view(text));
  if (!parsed) {
    return fail_with(path, parsed.error());
  }
  return parsed;
}

// The absolute path of the running executable (/proc/self/exe); errors name /proc/self/exe.
Result<std::string> self_exe_path();

// Fails when `self` (self_exe_path()) names a file replaced or removed since this process started (the
// kernel's " (deleted)" suffix): a copy of it, or a path to it written anywhere, would get another program
// or none. Error: "this gpuctk (<self>) was replaced since it started".
Result<void> check_self_not_replaced(std::string_view self);

// How far write_file_atomic goes to make the new content survive a crash.
enum class Durability {
  // fsync the temporary file before the rename and the directory after it: after a power cut the file
  // holds the old or the new content. For files that outlive the boot: CDI specs, config files.
  durable,
  // No fsync at all: readers still see the old or the whole new content, never a partial file, but a
  // power cut may lose the new content. For files that do not outlive the boot: a bundle's config.json
  // (the two fsyncs cost up to 12 ms per container start on ext4, measured on a busy disk).
  atomic_only,
  // fsync the temporary file, not the directory: after a power cut the name holds the old or the new
  // content, whole, never an empty or partial file; the rename itself may be lost. For state whose older
  // version is as valid as the newer after a reboot: gpuctk-dra-plugin's checkpoint (its claim specs are
  // in /var/run and its containers gone by then), at half of durable's cost.
  content,
};

// The owner and group write_file_atomic gives the new file (only root can give a file away).
struct FileOwner {
  uid_t uid;
  gid_t gid;
};

// Replaces `path` with `content` so that no reader ever sees a partial file. In the directory of `path`
// (opened once; everything below happens in that directory even if its path is swapped meanwhile):
//   1. a temporary file "<name>.<random>.tmp" is created with O_EXCL | O_NOFOLLOW, mode 0600;
//   2. `content` is written, then fchown(`owner`) when given, then fchmod(`mode`) (chown clears set-id
//      bits, so the mode comes last) - on the fd, never by path;
//   3. Durability::durable or content: fsync; then renameat over `path` (a symlink at `path` is replaced,
//      never followed); Durability::durable: fsync of the directory.
// On any failure before the rename the temporary file is removed and `path` is left as it was.
// Errors name the path: "write /b/x: create temporary file in /b: No such file or directory",
// "write /b/x: rename: Is a directory".
Result<void> write_file_atomic(const std::string& path, std::string_view content, mode_t mode,
                               Durability durability = Durability::durable,
                               std::optional<FileOwner> owner = std::nullopt);

// write_file_atomic of `name` (one component) in the directory `dir_fd` the caller opened: a caller with
// several files in one directory opens it once, so none of them can land elsewhere if its path changes
// between the writes. `path` names the file in errors.
Result<void> write_file_atomic_at(int dir_fd, const std::string& name, const std::string& path,
                                  std::string_view content, mode_t mode,
                                  Durability durability = Durability::durable,
                                  std::optional<FileOwner> owner = std::nullopt);

}  // namespace gpuctk
