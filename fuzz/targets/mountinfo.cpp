// util/mountinfo: /proc/<pid>/mountinfo as any process's mount table may make it (a container's mount
// points are its own paths, escaped). For any bytes: a table or an error naming the text; an accepted table
// has at most one mount per line, each with a mount point and an fstype; a table written again (paths
// escaped as the kernel escapes them) parses to the same mounts. Seeds: fuzz/seeds/mountinfo.
#include "util/mountinfo.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/fuzz_support.hpp"

namespace {

// `path` escaped as the kernel's show_mountinfo does: space, tab, newline and backslash as octal.
std::string escape(std::string_view path) {
  std::string out;
  for (const char c : path) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\\') {
      const auto byte = static_cast<unsigned char>(c);
      out += '\\';
      out += static_cast<char>('0' + ((byte >> 6) & 7));
      out += static_cast<char>('0' + ((byte >> 3) & 7));
      out += static_cast<char>('0' + (byte & 7));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto mounts = gpuctk::parse_mountinfo(text, "mountinfo");
  if (!mounts) {
    GPUCTK_FUZZ_CHECK(mounts.error().message.starts_with("mountinfo"), mounts.error().message);
    return 0;
  }
  size_t lines = 1;
  for (const char c : text) {
    lines += c == '\n' ? 1 : 0;
  }
  GPUCTK_FUZZ_CHECK(mounts->size() <= lines, std::to_string(mounts->size()));
  std::string again;
  std::vector<gpuctk::MountInfo> rewritten;
  for (const auto& m : *mounts) {
    GPUCTK_FUZZ_CHECK(
        !m.root.empty() && !m.mount_point.empty() && !m.fstype.empty() && !m.super_options.empty(),
        m.mount_point);
    // Written again with only the fields the parser keeps; fstype and options never hold a space.
    again += std::to_string(m.id) + " " + std::to_string(m.parent_id) + " 0:1 " + escape(m.root) + " " +
             escape(m.mount_point) + " rw" + (m.peer_group.empty() ? "" : " shared:" + m.peer_group) + " - " +
             m.fstype + " src " + m.super_options + "\n";
    rewritten.push_back(m);
  }
  const auto reread = gpuctk::parse_mountinfo(again, "mountinfo");
  GPUCTK_FUZZ_CHECK(reread.has_value(), reread ? std::string() : reread.error().message);
  GPUCTK_FUZZ_CHECK(*reread == rewritten, again);
  return 0;
}
