#include "steps/cuda_compat_note.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <utility>

#include <nlohmann/json.hpp>

#include "oci/json_text.hpp"
#include "util/strings.hpp"

namespace gpuctk::steps {

namespace {

constexpr std::string_view k_section_name = ".note.cuda.fwd_compatibility";
constexpr std::string_view k_note_owner = "NVIDIA Corporation";
constexpr uint32_t k_sht_note = 7;
constexpr uint64_t k_note_header_size = 12;  // namesz, descsz, type: 4 bytes each in both classes

std::string num(uint64_t value) {
  return std::to_string(value);
}

// --- the ELF file ------------------------------------------------------------------------------------

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

// EI_DATA: how the file stores its numbers (the note's numbers too).
enum class ByteOrder { little, big };

// The number of `width` bytes at `at`; the caller has checked the bounds.
uint64_t read_number(std::string_view bytes, size_t at, size_t width, ByteOrder order) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    const size_t byte = order == ByteOrder::little ? at + width - 1 - i : at + i;
    value = (value << 8) | static_cast<unsigned char>(bytes[byte]);
  }
  return value;
}

// Whether [offset, offset + size) lies inside a buffer of `total` bytes (no overflow for any inputs).
bool fits(uint64_t offset, uint64_t size, uint64_t total) {
  return offset <= total && size <= total - offset;
}

struct Section {
  uint64_t offset, size, addralign;
  uint32_t name, type;
};

Section section_at(std::string_view bytes, const ElfLayout& elf, ByteOrder order, uint64_t header_at) {
  const auto at = static_cast<size_t>(header_at);
  return Section{read_number(bytes, at + elf.sh_offset_at, elf.word_width, order),
                 read_number(bytes, at + elf.sh_size_at, elf.word_width, order),
                 read_number(bytes, at + elf.sh_addralign_at, elf.word_width, order),
                 static_cast<uint32_t>(read_number(bytes, at, 4, order)),
                 static_cast<uint32_t>(read_number(bytes, at + 4, 4, order))};
}

// The bytes of section `index`, or an error when they are not inside the file.
Result<std::string_view> section_bytes(std::string_view bytes, const Section& section, uint64_t index) {
  if (!fits(section.offset, section.size, bytes.size())) {
    return fail("section " + num(index) + " (offset " + num(section.offset) + ", " + num(section.size) +
                " bytes) runs past the end of the file (" + num(bytes.size()) + " bytes)");
  }
  return bytes.substr(static_cast<size_t>(section.offset), static_cast<size_t>(section.size));
}

std::string_view without_nuls(std::string_view text) {
  while (!text.empty() && text.front() == '\0') {
    text.remove_prefix(1);
  }
  while (!text.empty() && text.back() == '\0') {
    text.remove_suffix(1);
  }
  return text;
}

// The `size` bytes of `data` (not empty) from `from`, clamped as NVIDIA's reader clamps them: a start at
// or past the end is the last byte, an end past the end is the end.
std::string_view clamped(std::string_view data, uint64_t from, uint64_t size) {
  from = std::min<uint64_t>(from, data.size() - 1);
  const uint64_t to = std::min<uint64_t>(data.size(), from + size);  // both below 2^34: no overflow
  return data.substr(static_cast<size_t>(from), static_cast<size_t>(to - from));
}

// The descriptor of the first note of the note section `data` (see the header), or nullopt when that
// note is empty or not NVIDIA's.
Result<std::optional<std::string_view>> first_note_descriptor(std::string_view data, uint64_t addralign,
                                                              ByteOrder order) {
  if (data.size() < k_note_header_size) {
    return fail("note header truncated (" + num(data.size()) + " bytes, need " + num(k_note_header_size) +
                ")");
  }
  const auto namesz = static_cast<uint32_t>(read_number(data, 0, 4, order));
  const auto descsz = static_cast<uint32_t>(read_number(data, 4, 4, order));
  if (namesz == 0 || descsz == 0) {
    return std::nullopt;
  }
  // namesz rounded up to sh_addralign in 32-bit arithmetic, as NVIDIA rounds it: an alignment of 0
  // gives 0 (no owner), one that is not a power of two gives some other size; clamping bounds them all.
  const auto alignment = static_cast<uint32_t>(addralign);
  const uint32_t owner_size = (namesz + alignment - 1) & ~(alignment - 1);
  if (without_nuls(clamped(data, k_note_header_size, owner_size)) != k_note_owner) {
    return std::nullopt;
  }
  return without_nuls(clamped(data, k_note_header_size + owner_size, descsz));
}

// --- the descriptor's JSON, decoded as encoding/json decodes it ---------------------------------------

using Json = nlohmann::json;

// One JSON value as a SAX event gives it, and how a message shows it.
struct Value {
  enum class Kind { null, boolean, whole, other_number, string, array, object };
  Kind kind = Kind::null;
  int64_t whole = 0;  // Kind::whole: a number Go's strconv.ParseInt takes
  std::string shown;  // "null", "a boolean", "535", "1.5", "\"535\"", "an array", "an object"
};

// A Go []int as encoding/json fills it. Decoded items are stored into the slice's memory, which keeps
// what an earlier decode of the same key left past the current length (reflect.Value.Grow preserves
// it): a null item leaves the item that was there. An empty list or null drops the memory.
struct GoIntList {
  std::vector<int64_t> memory;
  size_t length = 0;
  size_t next = 0;  // the index of the next item of the list being decoded

  void item(std::optional<int64_t> value) {
    if (next == memory.size()) {
      memory.push_back(0);
    }
    if (value) {
      memory[next] = *value;
    }
    ++next;
  }
  void end() {
    length = next;
    if (length == 0) {
      memory.clear();
    }
  }
  void null() {
    memory.clear();
    length = 0;
  }
  [[nodiscard]] std::vector<int64_t> items() const {
    return {memory.begin(), memory.begin() + static_cast<std::ptrdiff_t>(length)};
  }
};

// The fields of NVIDIA's struct, by their Go names (the names keys are matched against).
enum class Field { none, format, cuda_version, driver, device };
struct FieldName {
  Field field;
  std::string_view name;
};
constexpr FieldName k_fields[] = {
    {Field::format, "Format"},              // Format int
    {Field::cuda_version, "CUDA Version"},  // CUDAVersion string `json:"CUDA Version"`
    {Field::driver, "Driver"},              // Driver []int
    {Field::device, "Device"},              // Device []int
};

// The field a key decodes into: an exact match first, else one that matches ignoring case as Go does.
Field field_of(std::string_view key) {
  for (const auto& [field, name] : k_fields) {
    if (key == name) {
      return field;
    }
  }
  for (const auto& [field, name] : k_fields) {
    if (oci::go_equal_fold(key, name)) {
      return field;
    }
  }
  return Field::none;
}

// "syntax error ... at line 1, column 37" from nlohmann's "[json.exception.parse_error.101] parse error
// at line 1, column 37: syntax error ...".
std::string syntax_error(std::string_view what) {
  constexpr std::string_view k_marker = "parse error";
  const auto start = what.find(k_marker);
  const auto colon = start == std::string_view::npos ? start : what.find(": ", start);
  if (colon == std::string_view::npos) {
    return std::string(what);
  }
  std::string message(what.substr(colon + 2));
  const auto position = what.substr(start + k_marker.size(), colon - start - k_marker.size());  // " at ..."
  return message.append(position);
}

// nlohmann's SAX handler that fills the struct as Go's decoder would. Returning false stops the parser;
// the reason is then in error().
class NoteDecoder {
 public:
  [[nodiscard]] const std::optional<std::string>& error() const { return m_error; }

  [[nodiscard]] CudaCompatNote note() const {
    return CudaCompatNote{m_format, m_cuda_version, m_driver.items(), m_device.items()};
  }

  bool null() { return scalar({Value::Kind::null, 0, "null"}); }
  bool boolean(bool /*value*/) { return scalar({Value::Kind::boolean, 0, "a boolean"}); }
  bool number_integer(Json::number_integer_t value) {
    return scalar({Value::Kind::whole, value, std::to_string(value)});
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return scalar({Value::Kind::other_number, 0, std::to_string(value)});
    }
    return scalar({Value::Kind::whole, static_cast<int64_t>(value), std::to_string(value)});
  }
  bool number_float(Json::number_float_t /*value*/, const Json::string_t& text) {
    return scalar({Value::Kind::other_number, 0, text});
  }
  bool string(Json::string_t& value) { return scalar({Value::Kind::string, 0, quote(value)}, value); }
  bool binary(Json::binary_t& /*value*/) { return failed(": binary value"); }  // not produced by JSON text
  bool start_object(std::size_t /*elements*/) { return open({Value::Kind::object, 0, "an object"}); }
  bool start_array(std::size_t /*elements*/) { return open({Value::Kind::array, 0, "an array"}); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(Json::string_t& key) {
    if (m_depth == 1) {
      m_field = field_of(key);
      m_key = std::move(key);
    }
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/, const Json::exception& e) {
    return failed(": " + syntax_error(e.what()));
  }

 private:
  // Stops the parser; `what` follows "note descriptor" in the message (" is ..." or ": ...").
  bool failed(std::string what) {
    m_error = std::move(what);
    return false;
  }

  [[nodiscard]] GoIntList& list_of(Field field) { return field == Field::driver ? m_driver : m_device; }

  // A scalar: the document itself, an item of a list, or the value of a key of the document.
  bool scalar(const Value& value, const std::string& text = {}) {
    if (m_skip_from != 0) {
      return true;  // inside a value of a key that is ignored
    }
    if (m_depth == 0) {
      // Go: null into a struct leaves it as it is; anything else is an unmarshal error.
      return value.kind == Value::Kind::null || failed(" is " + value.shown + ", expected an object");
    }
    if (m_list != nullptr) {
      return list_item(value);
    }
    switch (m_field) {
      case Field::none:
        return true;
      case Field::format:
        if (value.kind == Value::Kind::whole) {
          m_format = value.whole;
        }
        return value.kind == Value::Kind::whole || value.kind == Value::Kind::null ||
               failed(": " + quote(m_key) + " is " + value.shown + ", expected a whole number of 64 bits");
      case Field::cuda_version:
        if (value.kind == Value::Kind::string) {
          m_cuda_version = text;
        }
        return value.kind == Value::Kind::string || value.kind == Value::Kind::null ||
               failed(": " + quote(m_key) + " is " + value.shown + ", expected a string");
      case Field::driver:
      case Field::device:
        if (value.kind == Value::Kind::null) {
          list_of(m_field).null();
          return true;
        }
        return failed(": " + quote(m_key) + " is " + value.shown + ", expected an array of whole numbers");
    }
    return true;
  }

  bool list_item(const Value& value) {
    if (value.kind == Value::Kind::whole || value.kind == Value::Kind::null) {
      m_list->item(value.kind == Value::Kind::whole ? std::optional(value.whole) : std::nullopt);
      return true;
    }
    return failed(": " + quote(m_key) + "[" + num(m_list->next) + "] is " + value.shown +
                  ", expected a whole number of 64 bits");
  }

  bool open(const Value& value) {
    if (m_depth == k_cuda_compat_note_depth) {
      return failed(": nesting deeper than " + num(k_cuda_compat_note_depth) + " levels");
    }
    ++m_depth;
    if (m_skip_from != 0 || (m_depth == 1 && value.kind == Value::Kind::object)) {
      return true;
    }
    if (m_depth == 1) {
      return failed(" is " + value.shown + ", expected an object");
    }
    if (m_list != nullptr) {
      return list_item(value);
    }
    if (m_field == Field::none) {
      m_skip_from = m_depth;
      return true;
    }
    if ((m_field == Field::driver || m_field == Field::device) && value.kind == Value::Kind::array) {
      m_list = &list_of(m_field);
      m_list->next = 0;
      return true;
    }
    return scalar(value);  // a type error, as for a scalar of the wrong type
  }

  bool close() {
    if (m_skip_from == m_depth) {
      m_skip_from = 0;
    } else if (m_list != nullptr && m_depth == 2) {
      m_list->end();
      m_list = nullptr;
    }
    --m_depth;
    return true;
  }

  size_t m_depth = 0;      // arrays and objects open around the next event
  size_t m_skip_from = 0;  // not 0: the depth of the ignored value being skipped
  Field m_field = Field::none;
  std::string m_key;            // the last key of the document, as written
  GoIntList* m_list = nullptr;  // the list whose items are being decoded
  int64_t m_format = 0;
  std::string m_cuda_version;
  GoIntList m_driver;
  GoIntList m_device;
  std::optional<std::string> m_error;
};

// The descriptor (NULs already trimmed) decoded into a note.
Result<CudaCompatNote> decode_descriptor(std::string_view descriptor) {
  constexpr std::string_view k_name = "note descriptor";
  if (descriptor.size() > k_cuda_compat_note_limit) {
    return fail(std::string(k_name) + " is " + num(descriptor.size()) + " bytes, more than the limit of " +
                num(k_cuda_compat_note_limit));
  }
  NoteDecoder decoder;
  if (!Json::sax_parse(descriptor.begin(), descriptor.end(), &decoder)) {
    return fail(std::string(k_name) + decoder.error().value_or(": not parsed"));
  }
  return decoder.note();
}

// --- the whole file ----------------------------------------------------------------------------------

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
  if (data_encoding != 1 && data_encoding != 2) {
    return fail("unsupported ELF data encoding " + num(data_encoding));
  }
  const ElfLayout& elf = elf_class == 1 ? k_elf32 : k_elf64;
  const ByteOrder order = data_encoding == 1 ? ByteOrder::little : ByteOrder::big;
  if (bytes.size() < elf.header_size) {
    return fail("truncated ELF header (" + num(bytes.size()) + " bytes, need " + num(elf.header_size) + ")");
  }
  const uint64_t shoff = read_number(bytes, elf.shoff_at, elf.shoff_width, order);
  const uint64_t shentsize = read_number(bytes, elf.shentsize_at, 2, order);
  const uint64_t shnum = read_number(bytes, elf.shnum_at, 2, order);
  const uint64_t shstrndx = read_number(bytes, elf.shstrndx_at, 2, order);
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
  GPUCTK_TRY_ASSIGN(
      const auto names,
      section_bytes(bytes, section_at(bytes, elf, order, shoff + shstrndx * shentsize), shstrndx));

  // Every name is checked, as debug/elf checks them; the first SHT_NOTE section of the name is the note.
  std::optional<std::pair<uint64_t, Section>> found;
  for (uint64_t index = 0; index < shnum; ++index) {
    const Section section = section_at(bytes, elf, order, shoff + index * shentsize);
    if (section.name >= names.size()) {
      return fail("section " + num(index) + ": name offset " + num(section.name) +
                  " out of range (section name table has " + num(names.size()) + " bytes)");
    }
    const auto rest = names.substr(section.name);
    const auto end = rest.find('\0');
    if (end == std::string_view::npos) {
      return fail("section " + num(index) + ": name at offset " + num(section.name) + " is not terminated");
    }
    if (!found && section.type == k_sht_note && rest.substr(0, end) == k_section_name) {
      found.emplace(index, section);
    }
  }
  if (!found) {
    return std::nullopt;
  }
  const auto& [index, section] = *found;
  const std::string context = "section " + std::string(k_section_name);
  GPUCTK_TRY_ASSIGN(const auto data, section_bytes(bytes, section, index));
  auto descriptor = first_note_descriptor(data, section.addralign, order);
  if (!descriptor) {
    return fail_with(context, descriptor.error());
  }
  if (!*descriptor) {
    return std::nullopt;
  }
  auto note = decode_descriptor(**descriptor);
  if (!note) {
    return fail_with(context, note.error());
  }
  return std::optional<CudaCompatNote>(std::move(*note));
}

}  // namespace

Result<std::optional<CudaCompatNote>> parse_cuda_compat_note(std::string_view elf_bytes) {
  // nlohmann may still throw (std::bad_alloc, or an error we did not foresee): none escapes.
  try {
    return parse_note(elf_bytes);
  } catch (const std::exception& e) {
    return fail(std::string("reading ") + std::string(k_section_name) + ": " + e.what());
  }
}

}  // namespace gpuctk::steps
