#include "support/fuzz_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "cdi/codec.hpp"
#include "cdi/doc_tree.hpp"
#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "util/strings.hpp"

namespace gpuctk::fuzz {

void invariant_broken(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "gpuctk fuzz: invariant broken: %.*s\n", static_cast<int>(what.size()), what.data());
  if (!detail.empty()) {
    const auto quoted = quote(detail);
    std::fprintf(stderr, "gpuctk fuzz: %s\n", quoted.c_str());
  }
  std::abort();
}

namespace {

// `text`, which the writer produced in `format`, read back; aborts when it does not parse.
cdi::Spec reread(const std::string& text, cdi::Format format) {
  auto spec = cdi::parse_spec(text, format);
  if (!spec) {
    invariant_broken("the codec reads back what it wrote", spec.error().message + "\n" + text);
  }
  return std::move(*spec);
}

}  // namespace

void check_spec_round_trip(const cdi::Spec& spec) {
  const auto yaml = cdi::write_spec(spec, cdi::Format::yaml);
  const auto fast = cdi::read_canonical_yaml(yaml);
  GPUCTK_FUZZ_CHECK(fast.has_value(), yaml);  // the fast path takes every file gpuctk writes
  const auto slow = cdi::read_yaml_document(yaml);
  GPUCTK_FUZZ_CHECK(slow.has_value(), yaml);
  GPUCTK_FUZZ_CHECK(*fast == *slow, yaml);
  // One write may replace invalid UTF-8; from then on the spec is a fixed point in both formats.
  const auto once = reread(yaml, cdi::Format::yaml);
  const auto yaml_again = cdi::write_spec(once, cdi::Format::yaml);
  GPUCTK_FUZZ_CHECK(reread(yaml_again, cdi::Format::yaml) == once, yaml_again);
  const auto json = cdi::write_spec(once, cdi::Format::json);
  GPUCTK_FUZZ_CHECK(reread(json, cdi::Format::json) == once, json);
  // Validation and the minimum version must cope with anything the codec accepts.
  (void)cdi::validate(spec);
  (void)cdi::minimum_version(spec);
}

ApplyInput split_apply_input(std::string_view data) {
  if (data.empty()) {
    return {};
  }
  ApplyInput input;
  input.flags = static_cast<uint8_t>(data[0]);
  data.remove_prefix(1);
  const auto nul = data.find('\0');
  input.config = data.substr(0, nul);
  if (nul != std::string_view::npos) {
    input.spec = data.substr(nul + 1);
  }
  return input;
}

std::string join_apply_input(uint8_t flags, std::string_view config, std::string_view spec) {
  std::string out(1, static_cast<char>(flags));
  out.append(config).push_back('\0');
  out.append(spec);
  return out;
}

cdi::StatNode fake_host_nodes() {
  return [](const std::string& host_path) -> Result<cdi::HostNode> {
    const auto h = std::hash<std::string>{}(host_path);
    if (h % 7 == 0) {
      return fail("stat " + host_path + ": No such file or directory");
    }
    if (h % 7 == 1) {
      return fail("stat " + host_path + ": not a device node");
    }
    static constexpr char k_types[] = {'c', 'b', 'p'};
    return cdi::HostNode{.type = k_types[(h >> 3) % 3],
                         .major = static_cast<int64_t>((h >> 8) % 512),
                         .minor = static_cast<int64_t>((h >> 20) % 1024),
                         .mode = static_cast<uint32_t>((h >> 32) & 0777)};
  };
}

std::string proc_file_input(ProcFile kind, std::string_view text) {
  std::string out(1, static_cast<char>(kind));
  out.append(text);
  return out;
}

namespace {

template <class T>
void append_int(std::string& bytes, T value) {
  char raw[sizeof value];
  std::memcpy(raw, &value, sizeof value);
  bytes.append(raw, sizeof value);
}

// Each entry's value then key, NUL-terminated; `at` gets their {key, value} offsets in the table.
std::string string_table(const std::vector<ldcache::LdCacheEntry>& entries,
                         std::vector<std::pair<uint32_t, uint32_t>>& at) {
  std::string table;
  for (const auto& entry : entries) {
    const auto value = static_cast<uint32_t>(table.size());
    table.append(entry.value).push_back('\0');
    const auto key = static_cast<uint32_t>(table.size());
    table.append(entry.key).push_back('\0');
    at.emplace_back(key, value);
  }
  return table;
}

// The old header and entry table, offsets biased by `bias`.
std::string old_table(const std::vector<ldcache::LdCacheEntry>& entries,
                      const std::vector<std::pair<uint32_t, uint32_t>>& at, uint32_t bias) {
  std::string out("ld.so-1.7.0\0", 12);
  append_int(out, static_cast<uint32_t>(entries.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    append_int(out, entries[i].flags);
    append_int(out, bias + at[i].first);
    append_int(out, bias + at[i].second);
  }
  return out;
}

// The new header, entry table and strings.
std::string new_cache(const std::vector<ldcache::LdCacheEntry>& entries) {
  std::vector<std::pair<uint32_t, uint32_t>> at;
  const auto table = string_table(entries, at);
  const auto strings = static_cast<uint32_t>(48 + 24 * entries.size());
  std::string out = "glibc-ld.so.cache1.1";
  append_int(out, static_cast<uint32_t>(entries.size()));
  append_int(out, static_cast<uint32_t>(table.size()));
  out.push_back('\x02');  // little-endian (the fuzz targets run on x86-64)
  out.append(19, '\0');   // unused, no extension area, unused
  for (size_t i = 0; i < entries.size(); ++i) {
    append_int(out, entries[i].flags);
    append_int(out, strings + at[i].first);
    append_int(out, strings + at[i].second);
    append_int(out, entries[i].osversion);
    append_int(out, entries[i].hwcap);
  }
  return out + table;
}

}  // namespace

std::string write_ld_cache(const std::vector<ldcache::LdCacheEntry>& entries, ldcache::LdCacheFormat format) {
  switch (format) {
    case ldcache::LdCacheFormat::new_only:
      return new_cache(entries);
    case ldcache::LdCacheFormat::old_only: {
      std::vector<std::pair<uint32_t, uint32_t>> at;
      const auto table = string_table(entries, at);
      return old_table(entries, at, 0) + table;
    }
    case ldcache::LdCacheFormat::compat: {
      // ldconfig repeats the last entry when the old table would end off an 8-byte boundary.
      auto old_entries = entries;
      std::vector<std::pair<uint32_t, uint32_t>> at;
      string_table(entries, at);
      if (old_entries.size() % 2 == 1) {
        old_entries.push_back(old_entries.back());
        at.push_back(at.back());
      }
      // The old offsets point into the new table's strings, which follow the new header and entries.
      const auto bias = static_cast<uint32_t>(48 + 24 * entries.size());
      return old_table(old_entries, at, bias) + new_cache(entries);
    }
  }
  return {};
}

}  // namespace gpuctk::fuzz
