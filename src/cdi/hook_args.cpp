#include "cdi/hook_args.hpp"

#include <algorithm>

#include "ldcache/entry_arg.hpp"
#include "util/path.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

constexpr std::string_view k_argv0 = "gpuctk";
constexpr std::string_view k_hook_word = "hook";

std::vector<std::string> line_of(std::string_view name) {
  return {std::string(k_argv0), std::string(k_hook_word), std::string(name)};
}

void add(std::vector<std::string>& args, std::string_view option, const std::string& value) {
  args.emplace_back(option);
  args.push_back(value);
}

void add_links(std::vector<std::string>& args, const std::vector<HookLink>& links) {
  for (const auto& link : links) {
    add(args, k_opt_link, link_arg(link));
  }
}

// A link as a line carries it: split, and LINK a clean absolute path.
Result<HookLink> parse_link(std::string_view value) {
  GPUCTK_TRY_ASSIGN(auto link, split_link(value));
  if (!is_clean_path(link.link)) {
    return fail(std::string(k_opt_link) + " " + quote(value) +
                ": LINK must be an absolute container path without \".\" or \"..\"");
  }
  return link;
}

// The options of a line after "<argv0> hook <name>", one at a time.
class LineReader {
 public:
  LineReader(std::span<const std::string> args, std::string_view name) : m_args(args), m_name(name) {}

  // The line's prefix and size.
  [[nodiscard]] Result<void> check() const {
    if (m_args.size() > k_max_hook_args) {
      return fail("hook line: more than " + std::to_string(k_max_hook_args) + " arguments");
    }
    if (!is_hook_line(m_args, m_name)) {
      return fail("hook line: expected \"hook " + std::string(m_name) + "\" after the program");
    }
    return {};
  }
  [[nodiscard]] bool done() const { return m_next >= m_args.size(); }
  // The next option's name; "--name=VALUE" (as CLI11 takes it) keeps VALUE for value().
  std::string_view option() {
    const std::string_view arg = m_args[m_next++];
    m_inline.reset();
    const size_t eq = arg.find('=');
    if (!arg.starts_with("--") || eq == std::string_view::npos) {
      return arg;
    }
    m_inline = std::string(arg.substr(eq + 1));
    return arg.substr(0, eq);
  }
  Result<std::string> value(std::string_view option) {
    if (m_inline) {
      std::string inline_value = std::move(*m_inline);
      m_inline.reset();
      return inline_value;
    }
    if (done()) {
      return fail("hook line: " + quote(option) + " needs a value");
    }
    return m_args[m_next++];
  }
  // A flag's: "--flag=VALUE" is an error.
  [[nodiscard]] Result<void> no_value(std::string_view option) const {
    if (m_inline) {
      return fail("hook line: " + quote(option) + " takes no value");
    }
    return {};
  }

 private:
  std::span<const std::string> m_args;
  std::string_view m_name;
  size_t m_next = 3;
  std::optional<std::string> m_inline;  // the value of the last "--name=VALUE"
};

std::unexpected<Error> unknown(std::string_view option) {
  return fail("hook line: unknown option " + quote(option));
}

// The value options of container-start but --link, each with its field.
Result<bool> read_value(LineReader& line, std::string_view option, ContainerStartArgs& out) {
  const std::pair<std::string_view, std::optional<std::string>*> singles[] = {
      {k_opt_host_driver_version, &out.host_driver_version},
      {k_opt_host_cuda_version, &out.host_cuda_version},
      {k_opt_cuda_compat_container_root, &out.cuda_compat_container_root},
      {k_opt_ldconfig_path, &out.ldconfig_path},
  };
  for (const auto& [name, field] : singles) {
    if (option == name) {
      GPUCTK_TRY_ASSIGN(*field, line.value(option));
      return true;
    }
  }
  const std::pair<std::string_view, std::vector<std::string>*> lists[] = {
      {k_opt_folder, &out.folders},
      {k_opt_ld_cache_entry, &out.ld_cache_entries},
  };
  for (const auto& [name, field] : lists) {
    if (option == name) {
      GPUCTK_TRY_ASSIGN(auto value, line.value(option));
      field->push_back(std::move(value));
      return true;
    }
  }
  return false;
}

Result<void> read_link(LineReader& line, std::vector<HookLink>& links) {
  GPUCTK_TRY_ASSIGN(const auto value, line.value(k_opt_link));
  GPUCTK_TRY_ASSIGN(auto link, parse_link(value));
  links.push_back(std::move(link));
  return {};
}

}  // namespace

std::string link_arg(const HookLink& link) {
  return link.target + "::" + link.link;
}

Result<HookLink> split_link(std::string_view value) {
  const size_t sep = value.find("::");
  if (sep == std::string_view::npos || sep == 0 || sep + 2 == value.size() ||
      value.find("::", sep + 2) != std::string_view::npos) {
    return fail(std::string(k_opt_link) + " " + quote(value) + ": expected TARGET::LINK");
  }
  return HookLink{std::string(value.substr(0, sep)), std::string(value.substr(sep + 2))};
}

std::string ld_cache_entry_arg(const discover::LibraryCacheEntry& entry) {
  return ldcache::entry_arg(entry.flags, entry.osversion, entry.soname, entry.path);
}

std::string ld_cache_entry_path(std::string_view value) {
  auto fact = ldcache::parse_entry_arg(value);
  return fact ? std::move(fact->path) : std::string();
}

bool ContainerStartArgs::empty() const {
  return *this == ContainerStartArgs{};
}

std::vector<std::string> ContainerStartArgs::to_args() const {
  auto args = line_of(k_hook_container_start);
  add_links(args, links);
  const std::pair<std::string_view, const std::optional<std::string>*> singles[] = {
      {k_opt_host_driver_version, &host_driver_version},
      {k_opt_host_cuda_version, &host_cuda_version},
      {k_opt_cuda_compat_container_root, &cuda_compat_container_root},
      {k_opt_ldconfig_path, &ldconfig_path},
  };
  for (const auto& [option, value] : singles) {
    if (value->has_value()) {
      add(args, option, **value);
    }
  }
  for (const auto& folder : folders) {
    add(args, k_opt_folder, folder);
  }
  for (const auto& entry : ld_cache_entries) {
    add(args, k_opt_ld_cache_entry, entry);
  }
  if (disable_device_node_modification) {
    args.emplace_back(k_opt_disable_device_node_modification);
  }
  if (update_application_profile) {
    args.emplace_back(k_opt_update_application_profile);
  }
  return args;
}

Result<ContainerStartArgs> ContainerStartArgs::parse(std::span<const std::string> args) {
  LineReader line(args, k_hook_container_start);
  GPUCTK_TRY(line.check());
  ContainerStartArgs out;
  while (!line.done()) {
    const auto option = line.option();
    if (option == k_opt_link) {
      GPUCTK_TRY(read_link(line, out.links));
    } else if (option == k_opt_disable_device_node_modification) {
      GPUCTK_TRY(line.no_value(option));
      out.disable_device_node_modification = true;
    } else if (option == k_opt_update_application_profile) {
      GPUCTK_TRY(line.no_value(option));
      out.update_application_profile = true;
    } else {
      GPUCTK_TRY_ASSIGN(const bool known, read_value(line, option, out));
      if (!known) {
        return unknown(option);
      }
    }
  }
  return out;
}

std::vector<std::string> CreateSymlinksArgs::to_args() const {
  auto args = line_of(k_hook_create_symlinks);
  add_links(args, links);
  return args;
}

Result<CreateSymlinksArgs> CreateSymlinksArgs::parse(std::span<const std::string> args) {
  LineReader line(args, k_hook_create_symlinks);
  GPUCTK_TRY(line.check());
  CreateSymlinksArgs out;
  while (!line.done()) {
    const auto option = line.option();
    if (option != k_opt_link) {
      return unknown(option);
    }
    GPUCTK_TRY(read_link(line, out.links));
  }
  return out;
}

bool is_hook_line(std::span<const std::string> args, std::string_view name) {
  return args.size() >= 3 && args[1] == k_hook_word && args[2] == name;
}

}  // namespace gpuctk::cdi
