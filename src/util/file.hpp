#pragma once
// Whole-file reads and atomic whole-file writes.

#include <sys/mman.h>
#include <sys/types.h>

#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk {

// The bytes of `path`. Errors name the path: "read /x: No such file or directory".
Result<std::string> read_file(const std::string& path);

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

// The bytes of the regular file `path`, opened without following a symlink as its last component
// (O_NOFOLLOW), at most `max_size` of them. For files in directories others can write (bundles).
Result<std::string> read_file_nofollow(const std::string& path, size_t max_size);

// read_file(path) given to `parse` (a function of the text returning a Result); a parse error is
// prefixed with the path: "/proc/driver/nvidia/version: no version line".
template <class Parse>
auto read_parsed(const std::string& path, Parse&& parse) -> decltype(parse(std::string_view{})) {
  auto text = read_file(path);
  if (!text) {
    return std::unexpected(text.error());
  }
  auto parsed = parse(std::string_view(*text));
  if (!parsed) {
    return fail_with(path, parsed.error());
  }
  return parsed;
}

// The absolute path of the running executable (/proc/self/exe); errors name /proc/self/exe.
Result<std::string> self_exe_path();

// Replaces `path` with `content` so that no reader ever sees a partial file: writes a temporary file
// in the same directory, fsyncs it, sets `mode`, renames it over `path` and fsyncs the directory.
// On any failure the temporary file is removed and `path` is left as it was.
Result<void> write_file_atomic(const std::string& path, std::string_view content, mode_t mode);

}  // namespace gpuctk
