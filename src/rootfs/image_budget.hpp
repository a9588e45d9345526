#pragma once
// What reading an image in-process may cost one container start. Everything update-ldcache reads of the
// image itself (its linker configuration and the include patterns' folders, the folders it compares,
// the merge of its linker cache) spends one budget: a total of each kind of work below, and the deadline
// the sandboxed ldconfig gets (rootfs/sandbox.hpp). The image is hostile and the hook's CPU time is no
// container's (hook prestart runs outside the pod's cgroups), so a configuration that would keep it busy
// ends with one line instead. Once spent, every later charge fails too, with the same line: a reader
// that took a failed open for "nothing there" asks error() before it decides anything. Knows nothing of
// GPUs.

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "util/error.hpp"

namespace gpuctk::rootfs {

// The kinds of work counted.
enum class ImageWork : size_t { resolutions, components, bytes, entries };

// What one start may do of each (a Debian image's configuration costs about ten resolutions, fifty
// components, two hundred bytes and ten directory entries; these allow the largest configuration the
// per-file bounds of ldcache/linker_config.hpp let through, read a few times over).
struct ImageWorkLimit {
  ImageWork work;
  size_t limit;
  const char* noun;
};
inline constexpr ImageWorkLimit k_image_work_limits[] = {
    // Paths resolved inside the root (open_image_path): one openat2 each, which the kernel bounds to 40
    // links of at most 4 KiB for the whole path.
    {ImageWork::resolutions, size_t{1} << 16, "path resolutions"},
    // Those paths' components; in the portable walk (no openat2) also every component of every link text
    // it expands.
    {ImageWork::components, size_t{1} << 20, "path components"},
    // Bytes of the image's files read: its configuration (at most 256 files of 64 KiB a parse, and it
    // is parsed twice) and, in the merge, the configuration again and its linker cache (at most 64 MiB).
    {ImageWork::bytes, size_t{1} << 27, "bytes read"},
    // Directory entries listed (include patterns, the merge's folders).
    {ImageWork::entries, size_t{1} << 20, "directory entries"},
};

class ImageBudget {
 public:
  // A budget that ends `deadline` from now (update-ldcache: its SandboxLimits::deadline).
  explicit ImageBudget(std::chrono::milliseconds deadline);

  // Spends `amount` of `work`. False when the budget is spent, by this charge or an earlier one or by
  // the deadline; then check() says why.
  bool spend(ImageWork work, size_t amount);

  // Nothing while the budget lasts, else one line, e.g. "reading the image in-process: more than
  // 1048576 path components" or "reading the image in-process: past its deadline of 30 s".
  [[nodiscard]] Result<void> check() const;
  // That line, once the budget is spent.
  [[nodiscard]] std::unexpected<Error> exhausted() const { return fail(m_error.value_or("")); }

  // How much of `work` was spent (what was charged, the charge that failed included).
  [[nodiscard]] size_t spent(ImageWork work) const { return m_spent[static_cast<size_t>(work)]; }

 private:
  std::chrono::steady_clock::time_point m_end;
  std::chrono::milliseconds m_deadline;
  std::array<size_t, std::size(k_image_work_limits)> m_spent{};
  std::optional<std::string> m_error;
};

}  // namespace gpuctk::rootfs
