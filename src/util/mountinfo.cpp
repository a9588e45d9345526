#include "util/mountinfo.hpp"

#include <charconv>

#include "util/strings.hpp"

namespace gpuctk {

namespace {

bool is_octal(char c) {
  return c >= '0' && c <= '7';
}

bool parse_id(std::string_view text, uint64_t& id) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, id);
  return ec == std::errc{} && ptr == end;
}

}  // namespace

std::string unescape_mountinfo(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && is_octal(field[i + 1]) && is_octal(field[i + 2]) &&
        is_octal(field[i + 3])) {
      out +=
          static_cast<char>(((field[i + 1] - '0') << 6) | ((field[i + 2] - '0') << 3) | (field[i + 3] - '0'));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

Result<std::vector<MountInfo>> parse_mountinfo(std::string_view text, std::string_view name) {
  if (text.size() > k_max_mountinfo_size) {
    return fail(std::string(name) + ": larger than " + std::to_string(k_max_mountinfo_size) + " bytes");
  }
  std::vector<MountInfo> mounts;
  size_t number = 0;
  for (const std::string_view line : split(text, '\n')) {
    ++number;
    const auto where = [&] { return std::string(name) + " line " + std::to_string(number); };
    if (line.size() > k_max_mountinfo_line) {
      return fail(where() + ": longer than " + std::to_string(k_max_mountinfo_line) + " bytes");
    }
    if (line.empty()) {
      continue;
    }
    const std::vector<std::string_view> fields = split(line, ' ');
    size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") {
      ++dash;
    }
    // Fields the kernel always writes: an empty one (two spaces) is not its text.
    if (dash + 3 >= fields.size() || fields[3].empty() || fields[4].empty() || fields[dash + 1].empty() ||
        fields[dash + 3].empty()) {
      return fail(where() + ": not a mountinfo line: " + quote(line));
    }
    MountInfo mount;
    if (!parse_id(fields[0], mount.id) || !parse_id(fields[1], mount.parent_id)) {
      return fail(where() + ": bad mount id in " + quote(line));
    }
    mount.root = unescape_mountinfo(fields[3]);
    mount.mount_point = unescape_mountinfo(fields[4]);
    for (size_t i = 6; i < dash; ++i) {
      if (fields[i].starts_with("shared:")) {
        mount.peer_group = std::string(fields[i].substr(7));
      }
    }
    mount.fstype = std::string(fields[dash + 1]);
    mount.super_options = std::string(fields[dash + 3]);
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

}  // namespace gpuctk
