#include "hook/cuda_compat.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace gpuctk::hook {
namespace {

// --- ELF bytes built here: header, section contents, .shstrtab, then the section headers ---------------

enum class Bits { b32, b64 };

struct TestSection {
  std::string name;
  uint32_t type = 7;  // SHT_NOTE
  std::string data;
};

void put(std::string& bytes, size_t at, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) {
    bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

uint64_t get(const std::string& bytes, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = width; i > 0; --i) {
    value = (value << 8) | static_cast<unsigned char>(bytes[at + i - 1]);
  }
  return value;
}

void pad(std::string& bytes, size_t alignment) {
  bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, '\0');
}

// One note: namesz, descsz, type, the owner with its NUL, the descriptor, each padded to 4 bytes.
std::string note(std::string_view owner, std::string_view descriptor) {
  std::string out(12, '\0');
  put(out, 0, owner.size() + 1, 4);
  put(out, 4, descriptor.size(), 4);
  put(out, 8, 1, 4);
  out.append(owner).push_back('\0');
  pad(out, 4);
  out.append(descriptor);
  pad(out, 4);
  return out;
}

constexpr std::string_view k_json = R"({"CUDA Version": "12.4", "Driver": [525, 535]})";
constexpr std::string_view k_name = ".note.cuda.fwd_compatibility";

TestSection compat_section(std::string_view json = k_json) {
  return {std::string(k_name), 7, note("NVIDIA Corporation", json)};
}

// Sections: [0] null, `sections` in order, then .shstrtab (e_shstrndx).
std::string make_elf(const std::vector<TestSection>& sections, Bits bits = Bits::b64) {
  const bool b64 = bits == Bits::b64;
  std::string out(b64 ? 64 : 52, '\0');
  out.replace(0, 4,
              "\x7f"
              "ELF");
  out[4] = b64 ? 2 : 1;  // EI_CLASS
  out[5] = 1;            // EI_DATA: little-endian
  out[6] = 1;            // EI_VERSION
  std::string names(1, '\0');
  std::vector<std::array<uint64_t, 4>> headers{{0, 0, 0, 0}};  // name, type, offset, size
  auto add = [&](std::string_view name, uint64_t type, std::string_view data) {
    pad(out, 8);
    headers.push_back({names.size(), type, out.size(), data.size()});
    names.append(name).push_back('\0');
    out.append(data);
  };
  for (const auto& section : sections) {
    add(section.name, section.type, section.data);
  }
  const std::string shstrtab_name = ".shstrtab";
  add(shstrtab_name, 3, names + shstrtab_name + '\0');  // the table holds its own name too
  pad(out, 8);
  const size_t shoff = out.size();
  const size_t entry = b64 ? 64 : 40;
  for (const auto& [name, type, offset, size] : headers) {
    std::string header(entry, '\0');
    put(header, 0, name, 4);
    put(header, 4, type, 4);
    put(header, b64 ? 24 : 16, offset, b64 ? 8 : 4);
    put(header, b64 ? 32 : 20, size, b64 ? 8 : 4);
    put(header, b64 ? 48 : 32, 4, b64 ? 8 : 4);  // sh_addralign
    out += header;
  }
  put(out, b64 ? 40 : 32, shoff, b64 ? 8 : 4);     // e_shoff
  put(out, b64 ? 58 : 46, entry, 2);               // e_shentsize
  put(out, b64 ? 60 : 48, headers.size(), 2);      // e_shnum
  put(out, b64 ? 62 : 50, headers.size() - 1, 2);  // e_shstrndx
  return out;
}

// ELF64 field positions used to break files.
constexpr size_t k_shoff = 40, k_shentsize = 58, k_shnum = 60, k_shstrndx = 62;
constexpr size_t k_sh_name = 0, k_sh_offset = 24, k_sh_size = 32, k_sh_addralign = 48;

// Where section `index`'s header field `field` is in an ELF64 file.
size_t field_of(const std::string& elf, size_t index, size_t field) {
  return static_cast<size_t>(get(elf, k_shoff, 8)) + 64 * index + field;
}

// "note 12.4 [525,535]", "absent" or "error: <message>".
std::string parsed(std::string_view bytes) {
  const auto result = parse_cuda_compat_note(bytes);
  if (!result) {
    return "error: " + result.error().message;
  }
  if (!*result) {
    return "absent";
  }
  std::string out = "note " + (*result)->cuda_version + " [";
  for (size_t i = 0; i < (*result)->driver_majors.size(); ++i) {
    out += (i ? "," : "") + std::to_string((*result)->driver_majors[i]);
  }
  return out + "]";
}

std::string parsed_json(std::string_view json) {
  return parsed(make_elf({compat_section(json)}));
}

// --- parse_cuda_compat_note: well-formed files -------------------------------------------------------

TEST(CudaCompatNote, ReadsTheNoteOfAnElf64File) {
  const auto result = parse_cuda_compat_note(make_elf({{".text", 1, "code"}, compat_section()}));
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_TRUE(result->has_value());
  EXPECT_EQ(**result, (CudaCompatNote{"12.4", {525, 535}}));
}

TEST(CudaCompatNote, ReadsTheNoteOfAnElf32File) {
  EXPECT_EQ(parsed(make_elf({{".text", 1, "code"}, compat_section()}, Bits::b32)), "note 12.4 [525,535]");
}

TEST(CudaCompatNote, AcceptsDriverMajorsAsStringsOfDigits) {
  EXPECT_EQ(parsed_json(R"({"Driver": ["470", 535], "CUDA Version": "12.4.1", "Other": null})"),
            "note 12.4.1 [470,535]");
}

TEST(CudaCompatNote, AcceptsAnEmptyDriverList) {
  EXPECT_EQ(parsed_json(R"({"CUDA Version": "12.4", "Driver": []})"), "note 12.4 []");
}

TEST(CudaCompatNote, IgnoresTrailingNulsOfTheDescriptor) {
  EXPECT_EQ(parsed_json(std::string(k_json) + std::string(3, '\0')), "note 12.4 [525,535]");
}

TEST(CudaCompatNote, SkipsNotesOfOtherOwners) {
  const TestSection section{std::string(k_name), 7, note("GNU", "abcd") + note("NVIDIA Corporation", k_json)};
  EXPECT_EQ(parsed(make_elf({section})), "note 12.4 [525,535]");
}

TEST(CudaCompatNote, ReadsEightByteAlignedNotes) {
  // With sh_addralign 8 a note after note("GNU", "abcd") (20 bytes) starts at 24, not 20; in the
  // NVIDIA note the descriptor starts at 24 + 12 + 19 -> 56.
  std::string data = note("GNU", "abcd");
  data.resize(24, '\0');
  data.append(12, '\0');
  put(data, 24, 19, 4);
  put(data, 28, k_json.size(), 4);
  data.append("NVIDIA Corporation").resize(56, '\0');
  data.append(k_json).resize(104, '\0');
  auto elf = make_elf({{std::string(k_name), 7, data}});
  put(elf, field_of(elf, 1, k_sh_addralign), 8, 8);
  EXPECT_EQ(parsed(elf), "note 12.4 [525,535]");
  put(elf, field_of(elf, 1, k_sh_addralign), 4, 8);  // read with 4-byte padding the notes are garbage
  EXPECT_EQ(parsed(elf),
            "error: section .note.cuda.fwd_compatibility: note at offset 52: name size 28271 runs "
            "past the end of the section (104 bytes)");
}

// --- parse_cuda_compat_note: no note -----------------------------------------------------------------

TEST(CudaCompatNote, AbsentWithoutTheSection) {
  EXPECT_EQ(parsed(make_elf({{".text", 1, "code"}, {".note.gnu.build-id", 7, note("GNU", "abcd")}})),
            "absent");
  EXPECT_EQ(parsed(make_elf({}, Bits::b32)), "absent");
}

TEST(CudaCompatNote, AbsentWithoutSectionHeadersOrSectionNames) {
  auto elf = make_elf({compat_section()});
  put(elf, k_shstrndx, 0, 2);
  EXPECT_EQ(parsed(elf), "absent");
  put(elf, k_shoff, 0, 8);
  EXPECT_EQ(parsed(elf), "absent");
}

// --- parse_cuda_compat_note: malformed files ---------------------------------------------------------

TEST(CudaCompatNote, RejectsWhatIsNotElf) {
  EXPECT_EQ(parsed(""), "error: not an ELF file");
  EXPECT_EQ(parsed("\x7f"
                   "EL"),
            "error: not an ELF file");
  EXPECT_EQ(parsed("#!/bin/sh\necho hello\n"), "error: not an ELF file");
}

TEST(CudaCompatNote, RejectsTruncatedHeaders) {
  const auto elf64 = make_elf({compat_section()});
  const auto elf32 = make_elf({compat_section()}, Bits::b32);
  EXPECT_EQ(parsed(elf64.substr(0, 10)), "error: truncated ELF header (10 bytes)");
  EXPECT_EQ(parsed(elf64.substr(0, 63)), "error: truncated ELF header (63 bytes, need 64)");
  EXPECT_EQ(parsed(elf32.substr(0, 51)), "error: truncated ELF header (51 bytes, need 52)");
}

TEST(CudaCompatNote, RejectsOtherClassesAndBigEndian) {
  auto elf = make_elf({compat_section()});
  elf[4] = 3;
  EXPECT_EQ(parsed(elf), "error: unsupported ELF class 3");
  elf[4] = 2;
  elf[5] = 2;
  EXPECT_EQ(parsed(elf), "error: unsupported ELF data encoding 2 (only little-endian)");
}

TEST(CudaCompatNote, EveryTruncationIsAnError) {
  // The section headers come last, so no proper prefix of the file is a whole file.
  for (const auto bits : {Bits::b32, Bits::b64}) {
    const auto elf = make_elf({compat_section()}, bits);
    for (size_t size = 0; size < elf.size(); ++size) {
      EXPECT_FALSE(parse_cuda_compat_note(std::string_view(elf).substr(0, size))) << size;
    }
  }
}

TEST(CudaCompatNote, RejectsASectionHeaderTablePastTheEnd) {
  const auto good = make_elf({compat_section()});
  const auto size = std::to_string(good.size());
  auto elf = good;
  put(elf, k_shoff, good.size() - 10, 8);
  EXPECT_EQ(parsed(elf), "error: section header table (offset " + std::to_string(good.size() - 10) +
                             ", 3 entries of 64 bytes) runs past the end of the file (" + size + " bytes)");
  put(elf, k_shoff, UINT64_MAX, 8);
  EXPECT_EQ(parsed(elf),
            "error: section header table (offset 18446744073709551615, 3 entries of 64 bytes) "
            "runs past the end of the file (" +
                size + " bytes)");
  elf = good;
  put(elf, k_shnum, 0xffff, 2);
  EXPECT_EQ(parsed(elf), "error: section header table (offset " + std::to_string(get(good, k_shoff, 8)) +
                             ", 65535 entries of 64 bytes) runs past the end of the file (" + size +
                             " bytes)");
}

TEST(CudaCompatNote, RejectsExtendedNumberingAndOddHeaderSizes) {
  auto elf = make_elf({compat_section()});
  put(elf, k_shnum, 0, 2);
  EXPECT_EQ(parsed(elf), "error: extended section numbering is not supported");
  elf = make_elf({compat_section()});
  put(elf, k_shentsize, 40, 2);
  EXPECT_EQ(parsed(elf), "error: section header size 40, expected 64");
}

TEST(CudaCompatNote, RejectsASectionNameTableIndexOutOfRange) {
  auto elf = make_elf({compat_section()});
  put(elf, k_shstrndx, 3, 2);
  EXPECT_EQ(parsed(elf), "error: section name table index 3 out of range (3 sections)");
  put(elf, k_shstrndx, 0xffff, 2);  // SHN_XINDEX
  EXPECT_EQ(parsed(elf), "error: section name table index 65535 out of range (3 sections)");
}

TEST(CudaCompatNote, RejectsSectionsPastTheEnd) {
  const auto good = make_elf({compat_section()});
  const auto size = std::to_string(good.size());
  const auto note_offset = std::to_string(get(good, field_of(good, 1, k_sh_offset), 8));
  auto elf = good;
  put(elf, field_of(elf, 1, k_sh_size), UINT64_MAX, 8);
  EXPECT_EQ(parsed(elf), "error: section 1 (offset " + note_offset +
                             ", 18446744073709551615 bytes) runs past the end of the file (" + size +
                             " bytes)");
  elf = good;
  put(elf, field_of(elf, 1, k_sh_offset), good.size() + 1, 8);
  put(elf, field_of(elf, 1, k_sh_size), 0, 8);
  EXPECT_EQ(parsed(elf), "error: section 1 (offset " + std::to_string(good.size() + 1) +
                             ", 0 bytes) runs past the end of the file (" + size + " bytes)");
  elf = good;
  put(elf, field_of(elf, 2, k_sh_offset), UINT64_MAX - 1, 8);  // the name table
  EXPECT_EQ(parsed(elf),
            "error: section 2 (offset 18446744073709551614, 40 bytes) runs past the end of the "
            "file (" +
                size + " bytes)");
}

TEST(CudaCompatNote, RejectsBadSectionNames) {
  auto elf = make_elf({compat_section()});
  put(elf, field_of(elf, 1, k_sh_name), 40, 4);
  EXPECT_EQ(parsed(elf), "error: section 1: name offset 40 out of range (section name table has 40 bytes)");
  elf = make_elf({compat_section()});
  put(elf, field_of(elf, 2, k_sh_size), 39, 8);  // cuts the NUL after ".shstrtab"
  EXPECT_EQ(parsed(elf), "error: section 2: name at offset 30 is not terminated");
}

TEST(CudaCompatNote, RejectsTwoSectionsOrTheWrongType) {
  EXPECT_EQ(parsed(make_elf({compat_section(), {".text", 1, "code"}, compat_section()})),
            "error: several .note.cuda.fwd_compatibility sections (1 and 3)");
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 1, note("NVIDIA Corporation", k_json)}})),
            "error: section .note.cuda.fwd_compatibility has type 1, expected SHT_NOTE (7)");
}

// A note owned by someone else is an error rather than "absent": absent would select the looser
// major-only rule for a library that asked to be restricted.
TEST(CudaCompatNote, RejectsAWrongOwnerOrTwoNotes) {
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, note("NVIDIA Corp", k_json)}})),
            "error: section .note.cuda.fwd_compatibility: no note owned by \"NVIDIA Corporation\"");
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, ""}})),
            "error: section .note.cuda.fwd_compatibility: no note owned by \"NVIDIA Corporation\"");
  const auto twice = note("NVIDIA Corporation", k_json) + note("NVIDIA Corporation", k_json);
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, twice}})),
            "error: section .note.cuda.fwd_compatibility: several notes owned by \"NVIDIA Corporation\"");
}

TEST(CudaCompatNote, RejectsNoteSizesPastTheSection) {
  const auto good = note("NVIDIA Corporation", k_json);  // 12 + 20 + 48 = 80 bytes
  auto data = good;
  put(data, 0, UINT32_MAX, 4);
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data}})),
            "error: section .note.cuda.fwd_compatibility: note at offset 0: name size 4294967295 runs past "
            "the end of the section (80 bytes)");
  data = good;
  put(data, 4, UINT32_MAX, 4);
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data}})),
            "error: section .note.cuda.fwd_compatibility: note at offset 0: descriptor size 4294967295 runs "
            "past the end of the section (80 bytes)");
  data = good;
  put(data, 4, 49, 4);  // one byte more than there is
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data}})),
            "error: section .note.cuda.fwd_compatibility: note at offset 0: descriptor size 49 runs past the "
            "end of the section (80 bytes)");
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, good + std::string("\4\0\0\0\0", 5)}})),
            "error: section .note.cuda.fwd_compatibility: note at offset 80: truncated header (5 bytes left, "
            "need 12)");
}

TEST(CudaCompatNote, RejectsAnOversizedDescriptor) {
  const std::string json = std::string(k_json) + std::string(k_cuda_compat_note_limit, ' ');
  EXPECT_EQ(parsed_json(json), "error: section .note.cuda.fwd_compatibility: note descriptor is " +
                                   std::to_string(json.size()) + " bytes, more than the limit of 65536");
}

TEST(CudaCompatNote, RejectsBadJson) {
  const std::string prefix = "error: section .note.cuda.fwd_compatibility: note descriptor";
  EXPECT_EQ(parsed_json(R"({"CUDA Version": "12.4",)"),
            prefix +
                ": syntax error while parsing object key - unexpected end of input; expected string "
                "literal at line 1, column 25");
  EXPECT_EQ(parsed_json("[525, 535]"), prefix + " is an array, expected an object");
  EXPECT_EQ(parsed_json(R"("12.4")"), prefix + " is a string, expected an object");
  EXPECT_EQ(parsed_json(R"({"Driver": [535]})"), prefix + ": missing \"CUDA Version\"");
  EXPECT_EQ(parsed_json(R"({"CUDA Version": 12.4, "Driver": [535]})"),
            prefix + ": \"CUDA Version\" is a number, expected a string");
  EXPECT_EQ(parsed_json(R"({"CUDA Version": "12.x", "Driver": [535]})"),
            prefix + ": \"CUDA Version\" is \"12.x\", expected a version like \"12.4\"");
  EXPECT_EQ(parsed_json(R"({"CUDA Version": "", "Driver": [535]})"),
            prefix + ": \"CUDA Version\" is \"\", expected a version like \"12.4\"");
  EXPECT_EQ(parsed_json(R"({"CUDA Version": "12.4"})"), prefix + ": missing \"Driver\"");
  EXPECT_EQ(parsed_json(R"({"CUDA Version": "12.4", "Driver": "535"})"),
            prefix + ": \"Driver\" is a string, expected an array");
}

TEST(CudaCompatNote, RejectsDriverMajorsThatAreNotWholeNumbers) {
  const std::string prefix = "error: section .note.cuda.fwd_compatibility: note descriptor: \"Driver\"";
  const std::string expected = ", expected a driver major (a whole number or a string of digits)";
  auto with_driver = [](std::string_view item) {
    return parsed_json(R"({"CUDA Version": "12.4", "Driver": [535, )" + std::string(item) + "]}");
  };
  EXPECT_EQ(with_driver("470.5"), prefix + "[1] is 470.5" + expected);
  EXPECT_EQ(with_driver("-1"), prefix + "[1] is -1" + expected);
  EXPECT_EQ(with_driver("4294967296"), prefix + "[1] is 4294967296" + expected);
  EXPECT_EQ(with_driver(R"("47a")"), prefix + "[1] is \"47a\"" + expected);
  EXPECT_EQ(with_driver(R"("+470")"), prefix + "[1] is \"+470\"" + expected);
  EXPECT_EQ(with_driver(R"("")"), prefix + "[1] is \"\"" + expected);
  EXPECT_EQ(with_driver("true"), prefix + "[1] is a boolean" + expected);
  EXPECT_EQ(with_driver("null"), prefix + "[1] is a null" + expected);
  EXPECT_EQ(with_driver("[470]"), prefix + "[1] is an array" + expected);
}

TEST(CudaCompatNote, SurvivesEveryByteOverwritten) {
  // Hostile input: every single-byte change must give a note, no note or an error, never a crash or an
  // out-of-bounds read (the ASan build checks the latter). The header and section headers are what
  // matter; most changes to them are errors.
  for (const auto bits : {Bits::b32, Bits::b64}) {
    const auto good = make_elf({compat_section()}, bits);
    size_t errors = 0;
    for (size_t at = 0; at < good.size(); ++at) {
      for (const char value : {'\0', '\x01', '\x7f', '\xff'}) {
        auto elf = good;
        elf[at] = value;
        errors += parse_cuda_compat_note(elf) ? 0 : 1;
      }
    }
    EXPECT_GT(errors, good.size());
  }
}

// --- compat_library_version --------------------------------------------------------------------------

TEST(CudaCompatLibrary, FindsTheOneVersionedLibcuda) {
  EXPECT_EQ(compat_library_version({"libcuda.so", "libcuda.so.1", "libcuda.so.550.54.15",
                                    "libnvidia-ptxjitcompiler.so.550.54.15", "libcudadebugger.so.550.54.15"}),
            "550.54.15");
  EXPECT_EQ(compat_library_version({"libcuda.so.535.104"}), "535.104");
  EXPECT_EQ(compat_library_version({"libcuda.so.535.104.05"}), "535.104.05");
}

TEST(CudaCompatLibrary, NoneWithoutAMatch) {
  EXPECT_EQ(compat_library_version({}), std::nullopt);
  EXPECT_EQ(compat_library_version({"libcuda.so", "libcuda.so.1"}), std::nullopt);
  for (const char* name :
       {"libcuda.so.550", "libcuda.so.550.x", "libcuda.so.550.54.15.1", "libcuda.so.550..15",
        "libcuda.so.550.54.", "libcuda.so..54", "libcuda.so.550.54.15 ", "libcuda.so.-1.2",
        "libcuda.so.+550.54", "xlibcuda.so.550.54.15", "libcuda.so.550.54.15.bak", "libcuda.so.550.54.15~",
        "LIBCUDA.SO.550.54.15"}) {
    EXPECT_EQ(compat_library_version({name}), std::nullopt) << name;
  }
}

TEST(CudaCompatLibrary, NoneWhenAmbiguous) {
  EXPECT_EQ(compat_library_version({"libcuda.so.550.54.15", "libcuda.so.545.23.08"}), std::nullopt);
  EXPECT_EQ(compat_library_version({"libcuda.so.550.54", "libcuda.so.550.54.15"}), std::nullopt);
}

// --- use_cuda_compat ---------------------------------------------------------------------------------

const std::optional<CudaCompatNote> k_note = CudaCompatNote{"12.4", {525, 535}};

TEST(CudaCompatDecision, WithANote) {
  EXPECT_TRUE(use_cuda_compat("550.54.15", k_note, "535.104.05"));
  EXPECT_TRUE(use_cuda_compat("550.54.15", k_note, "525.147.05"));
  // The host driver's major is not listed.
  EXPECT_FALSE(use_cuda_compat("550.54.15", k_note, "470.239.06"));
  EXPECT_FALSE(use_cuda_compat("550.54.15", k_note, "545.23.08"));
  EXPECT_FALSE(use_cuda_compat("550.54.15", CudaCompatNote{"12.4", {}}, "535.104.05"));
  // The host driver is newer than (or the same as) the compat driver, even if listed.
  const std::optional<CudaCompatNote> note_550 = CudaCompatNote{"12.4", {535, 550, 555}};
  EXPECT_FALSE(use_cuda_compat("550.54.15", note_550, "555.42.02"));
  EXPECT_FALSE(use_cuda_compat("550.54.15", note_550, "550.90.07"));
  EXPECT_FALSE(use_cuda_compat("550.54.15", note_550, "550.54.15"));
  EXPECT_FALSE(use_cuda_compat("550.54", note_550, "550.54.0"));
  // Numeric, not textual: 100 > 54, 15 > 9.
  EXPECT_TRUE(use_cuda_compat("550.100", note_550, "550.54.15"));
  EXPECT_TRUE(use_cuda_compat("550.54.15", note_550, "550.54.9"));
  EXPECT_TRUE(use_cuda_compat("550.54.15.1", note_550, "550.54.15"));
}

TEST(CudaCompatDecision, WithoutANoteComparesMajors) {
  EXPECT_TRUE(use_cuda_compat("550.54.15", std::nullopt, "535.104.05"));
  EXPECT_TRUE(use_cuda_compat("1000.1", std::nullopt, "999.99.99"));
  EXPECT_FALSE(use_cuda_compat("550.54.15", std::nullopt, "550.40.07"));
  EXPECT_FALSE(use_cuda_compat("550.54.15", std::nullopt, "550.90.07"));
  EXPECT_FALSE(use_cuda_compat("535.104.05", std::nullopt, "550.54.15"));
}

TEST(CudaCompatDecision, FalseForMissingOrBadVersions) {
  for (const char* host :
       {"", "abc", "535.", ".535", "535..05", "535.x", "-535.1", " 535.104.05", "99999999999999999999.1"}) {
    EXPECT_FALSE(use_cuda_compat("550.54.15", k_note, host)) << host;
    EXPECT_FALSE(use_cuda_compat("550.54.15", std::nullopt, host)) << host;
  }
  for (const char* compat : {"", "550.x", "550.54.", "v550"}) {
    EXPECT_FALSE(use_cuda_compat(compat, k_note, "535.104.05")) << compat;
    EXPECT_FALSE(use_cuda_compat(compat, std::nullopt, "535.104.05")) << compat;
  }
}

}  // namespace
}  // namespace gpuctk::hook
