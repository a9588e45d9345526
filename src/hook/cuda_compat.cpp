#include "hook/cuda_compat.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <utility>

#include <nlohmann/json.hpp>

#include "oci/json_text.hpp"
#include "util/strings.hpp"

namespace gpuctk::hook {

namespace {

constexpr std::string_view k_section_name = ".note.cuda.fwd_compatibility";
constexpr std::string_view k_note_owner = "NVIDIA Corporation";
constexpr uint32_t k_sht_note = 7;

// The two ELF classes differ only in where the fields are and how wide they are.
struct ElfLayout {
  size_t header_size;
  size_t shoff_at, shoff_width;  // e_shoff
  size_t shentsize_at, shnum_at, shstrndx_at;
  size_t section_header_size;
  size_t sh_offset_at, sh_size_at, sh_addralign_at, word_width;  // word_width: width of those three
};

// ELFCLASS32: Elf32_Ehdr (52 bytes) and Elf32_Shdr (40 bytes).
constexpr ElfLayout k_elf32{52, 32, 4, 46, 48, 50, 40, 16, 20, 32, 4};
// ELFCLASS64: Elf64_Ehdr (64 bytes) and Elf64_Shdr (64 bytes).
constexpr ElfLayout k_elf64{64, 40, 8, 58, 60, 62, 64, 24, 32, 48, 8};

// The little-endian number of `width` bytes at `at`; the caller has checked the bounds.
uint64_t read_le(std::string_view bytes, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = width; i > 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + i - 1]);
  }
  return value;
}

// Whether [offset, offset + size) lies inside a buffer of `total` bytes (no overflow for any inputs).
bool fits(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

std::string num(uint64_t value) {
  return std::to_string(value);
}

struct Section {
  uint64_t offset, size, addralign;
  uint32_t name, type;
};

Section section_at(std::string_view bytes, const ElfLayout& elf, uint64_t header_at) {
  const auto at = static_cast<size_t>(header_at);
  return Section{read_le(bytes, at + elf.sh_offset_at, elf.word_width),
                 read_le(bytes, at + elf.sh_size_at, elf.word_width),
                 read_le(bytes, at + elf.sh_addralign_at, elf.word_width),
                 static_cast<uint32_t>(read_le(bytes, at, 4)),
                 static_cast<uint32_t>(read_le(bytes, at + 4, 4))};
}

// The bytes of section `index`, or an error when they are not inside the file.
Result<std::string_view> section_bytes(std::string_view bytes, const Section& section, uint64_t index) {
  if (!fits(section.offset, section.size, bytes.size())) {
    return fail("section " + num(index) + " (offset " + num(section.offset) + ", " + num(section.size) +
                " bytes) runs past the end of the file (" + num(bytes.size()) + " bytes)");
  }
  return bytes.substr(static_cast<size_t>(section.offset), static_cast<size_t>(section.size));
}

std::string_view without_trailing_nuls(std::string_view text) {
  while (!text.empty() && text.back() == '\0') {
    text.remove_suffix(1);
  }
  return text;
}

uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The descriptor of the one note owned by k_note_owner in the note section `data`. Each note is
// namesz, descsz, type (4 bytes each, in both classes), then the name and the descriptor, each padded
// so that what follows starts at a multiple of the section's alignment (8 when sh_addralign is 8, as
// for GNU property notes, else 4), counted from the section start. Every step consumes at least 12 bytes.
Result<std::string_view> owner_descriptor(std::string_view data, uint64_t addralign) {
  const uint64_t alignment = addralign == 8 ? 8 : 4;
  std::optional<std::string_view> found;
  uint64_t at = 0;
  while (at < data.size()) {
    const std::string where = "note at offset " + num(at);
    const uint64_t left = data.size() - at;
    if (left < 12) {
      return fail(where + ": truncated header (" + num(left) + " bytes left, need 12)");
    }
    const uint64_t namesz = read_le(data, static_cast<size_t>(at), 4);
    const uint64_t descsz = read_le(data, static_cast<size_t>(at) + 4, 4);
    const uint64_t name_at = at + 12;
    // at is within the section and namesz, descsz are 32-bit: no sum below overflows 64 bits.
    const uint64_t desc_at = align_up(name_at + namesz, alignment);
    if (!fits(name_at, namesz, data.size()) || desc_at > data.size()) {
      return fail(where + ": name size " + num(namesz) + " runs past the end of the section (" +
                  num(data.size()) + " bytes)");
    }
    if (!fits(desc_at, descsz, data.size())) {
      return fail(where + ": descriptor size " + num(descsz) + " runs past the end of the section (" +
                  num(data.size()) + " bytes)");
    }
    const auto name = data.substr(static_cast<size_t>(name_at), static_cast<size_t>(namesz));
    if (without_trailing_nuls(name) == k_note_owner) {
      if (found) {
        return fail("several notes owned by " + quote(k_note_owner));
      }
      found = data.substr(static_cast<size_t>(desc_at), static_cast<size_t>(descsz));
    }
    // The last note's descriptor padding may be missing; clamp so the loop ends.
    at = std::min<uint64_t>(align_up(desc_at + descsz, alignment), data.size());
  }
  if (!found) {
    return fail("no note owned by " + quote(k_note_owner));
  }
  return *found;
}

// Whether `text` is one or more dotted groups of decimal digits: "12", "12.4", "550.54.15".
bool is_dotted_decimal(std::string_view text) {
  const auto parts = split(text, '.');
  return std::ranges::all_of(parts, [](std::string_view part) {
    return !part.empty() && std::ranges::all_of(part, [](char c) { return c >= '0' && c <= '9'; });
  });
}

// The descriptor's JSON as a CudaCompatNote.
Result<CudaCompatNote> parse_note_json(std::string_view descriptor) {
  constexpr std::string_view k_name = "note descriptor";
  if (descriptor.size() > k_cuda_compat_note_limit) {
    return fail(std::string(k_name) + " is " + num(descriptor.size()) + " bytes, more than the limit of " +
                num(k_cuda_compat_note_limit));
  }
  GPUCTK_TRY_ASSIGN(auto json, oci::parse_json(without_trailing_nuls(descriptor), k_name));
  if (!json.is_object()) {
    return fail(std::string(k_name) + " is " + oci::json_type_phrase(json) + ", expected an object");
  }
  const std::string prefix = std::string(k_name) + ": ";
  CudaCompatNote note;

  const auto cuda = json.find("CUDA Version");
  if (cuda == json.end()) {
    return fail(prefix + "missing \"CUDA Version\"");
  }
  if (!cuda->is_string()) {
    return fail(prefix + "\"CUDA Version\" is " + oci::json_type_phrase(*cuda) + ", expected a string");
  }
  note.cuda_version = cuda->get<std::string>();
  if (!is_dotted_decimal(note.cuda_version)) {
    return fail(prefix + "\"CUDA Version\" is " + quote(note.cuda_version) +
                ", expected a version like \"12.4\"");
  }

  const auto drivers = json.find("Driver");
  if (drivers == json.end()) {
    return fail(prefix + "missing \"Driver\"");
  }
  if (!drivers->is_array()) {
    return fail(prefix + "\"Driver\" is " + oci::json_type_phrase(*drivers) + ", expected an array");
  }
  for (size_t i = 0; i < drivers->size(); ++i) {
    const auto& item = (*drivers)[i];
    std::optional<uint32_t> major;
    std::string shown;
    if (item.is_number_unsigned()) {
      const auto value = item.get<uint64_t>();
      if (value <= UINT32_MAX) {
        major = static_cast<uint32_t>(value);
      }
      shown = num(value);
    } else if (item.is_string()) {
      major = parse_u32(item.get_ref<const std::string&>());
      shown = quote(item.get_ref<const std::string&>());
    } else if (item.is_number()) {
      shown = item.dump();  // negative or fractional
    } else {
      shown = oci::json_type_phrase(item);
    }
    if (!major) {
      return fail(prefix + "\"Driver\"[" + num(i) + "] is " + shown +
                  ", expected a driver major (a whole number or a string of digits)");
    }
    note.driver_majors.push_back(*major);
  }
  return note;
}

Result<std::optional<CudaCompatNote>> parse_note(std::string_view bytes) {
  if (bytes.size() < 4 || bytes.substr(0, 4) != std::string_view("\x7f"
                                                                 "ELF",
                                                                 4)) {
    return fail("not an ELF file");
  }
  if (bytes.size() < 16) {
    return fail("truncated ELF header (" + num(bytes.size()) + " bytes)");
  }
  const auto elf_class = static_cast<unsigned char>(bytes[4]);
  const auto data_encoding = static_cast<unsigned char>(bytes[5]);
  if (elf_class != 1 && elf_class != 2) {
    return fail("unsupported ELF class " + num(elf_class));
  }
  if (data_encoding != 1) {
    return fail("unsupported ELF data encoding " + num(data_encoding) + " (only little-endian)");
  }
  const ElfLayout& elf = elf_class == 1 ? k_elf32 : k_elf64;
  if (bytes.size() < elf.header_size) {
    return fail("truncated ELF header (" + num(bytes.size()) + " bytes, need " + num(elf.header_size) + ")");
  }
  const uint64_t shoff = read_le(bytes, elf.shoff_at, elf.shoff_width);
  const uint64_t shentsize = read_le(bytes, elf.shentsize_at, 2);
  const uint64_t shnum = read_le(bytes, elf.shnum_at, 2);
  const uint64_t shstrndx = read_le(bytes, elf.shstrndx_at, 2);
  if (shoff == 0) {
    return std::nullopt;  // no section headers
  }
  if (shnum == 0) {
    return fail("extended section numbering is not supported");
  }
  if (shentsize != elf.section_header_size) {
    return fail("section header size " + num(shentsize) + ", expected " + num(elf.section_header_size));
  }
  // shnum and shentsize are 16-bit: the product cannot overflow.
  if (!fits(shoff, shnum * shentsize, bytes.size())) {
    return fail("section header table (offset " + num(shoff) + ", " + num(shnum) + " entries of " +
                num(shentsize) + " bytes) runs past the end of the file (" + num(bytes.size()) + " bytes)");
  }
  if (shstrndx == 0) {
    return std::nullopt;  // sections without names: none is called k_section_name
  }
  if (shstrndx >= shnum) {
    return fail("section name table index " + num(shstrndx) + " out of range (" + num(shnum) + " sections)");
  }
  GPUCTK_TRY_ASSIGN(const auto names,
                    section_bytes(bytes, section_at(bytes, elf, shoff + shstrndx * shentsize), shstrndx));

  std::optional<std::pair<uint64_t, Section>> found;
  for (uint64_t index = 0; index < shnum; ++index) {
    const Section section = section_at(bytes, elf, shoff + index * shentsize);
    if (section.name >= names.size()) {
      return fail("section " + num(index) + ": name offset " + num(section.name) +
                  " out of range (section name table has " + num(names.size()) + " bytes)");
    }
    const auto rest = names.substr(section.name);
    const auto end = rest.find('\0');
    if (end == std::string_view::npos) {
      return fail("section " + num(index) + ": name at offset " + num(section.name) + " is not terminated");
    }
    if (rest.substr(0, end) != k_section_name) {
      continue;
    }
    if (found) {
      return fail("several " + std::string(k_section_name) + " sections (" + num(found->first) + " and " +
                  num(index) + ")");
    }
    found.emplace(index, section);
  }
  if (!found) {
    return std::nullopt;
  }
  const auto& [index, section] = *found;
  const std::string context = "section " + std::string(k_section_name);
  if (section.type != k_sht_note) {
    return fail(context + " has type " + num(section.type) + ", expected SHT_NOTE (" + num(k_sht_note) + ")");
  }
  GPUCTK_TRY_ASSIGN(const auto data, section_bytes(bytes, section, index));
  const auto descriptor = owner_descriptor(data, section.addralign);
  if (!descriptor) {
    return fail_with(context, descriptor.error());
  }
  auto note = parse_note_json(*descriptor);
  if (!note) {
    return fail_with(context, note.error());
  }
  return std::optional<CudaCompatNote>(std::move(*note));
}

// The components of a dotted decimal version, or nothing ("", "550.", "550.x", a component over 64 bits).
std::optional<std::vector<uint64_t>> version_parts(std::string_view text) {
  std::vector<uint64_t> parts;
  for (const auto part : split(text, '.')) {
    const auto value = parse_unsigned(part);
    if (!value) {
      return std::nullopt;
    }
    parts.push_back(*value);
  }
  return parts;
}

// <0, 0, >0 as a is older, the same as, newer than b; a missing component counts as 0.
int compare_versions(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const uint64_t x = i < a.size() ? a[i] : 0;
    const uint64_t y = i < b.size() ? b[i] : 0;
    if (x != y) {
      return x < y ? -1 : 1;
    }
  }
  return 0;
}

}  // namespace

Result<std::optional<CudaCompatNote>> parse_cuda_compat_note(std::string_view elf_bytes) {
  // nlohmann may still throw (e.g. std::bad_alloc, or a type error we did not foresee): none escapes.
  try {
    return parse_note(elf_bytes);
  } catch (const std::exception& e) {
    return fail(std::string("reading ") + std::string(k_section_name) + ": " + e.what());
  }
}

std::optional<std::string> compat_library_version(const std::vector<std::string>& regular_file_names) {
  constexpr std::string_view k_prefix = "libcuda.so.";
  std::optional<std::string> version;
  for (const auto& name : regular_file_names) {
    if (!name.starts_with(k_prefix)) {
      continue;
    }
    const std::string_view rest = std::string_view(name).substr(k_prefix.size());
    const auto parts = split(rest, '.');
    if (parts.size() < 2 || parts.size() > 3 || !is_dotted_decimal(rest)) {
      continue;
    }
    if (version) {
      return std::nullopt;  // several: ambiguous, do not guess
    }
    version = std::string(rest);
  }
  return version;
}

bool use_cuda_compat(std::string_view compat_version, const std::optional<CudaCompatNote>& note,
                     std::string_view host_driver_version) {
  const auto compat = version_parts(compat_version);
  const auto host = version_parts(host_driver_version);
  if (!compat || !host) {
    return false;
  }
  const uint64_t host_major = host->front();
  if (!note) {
    return compat->front() > host_major;
  }
  const bool supported = std::ranges::any_of(
      note->driver_majors, [&](unsigned major) { return static_cast<uint64_t>(major) == host_major; });
  return supported && compare_versions(*compat, *host) > 0;
}

}  // namespace gpuctk::hook
