#include "steps/cuda_compat_note.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "util/file.hpp"

namespace gpuctk::steps {
namespace {

// --- ELF bytes built here: header, section contents, .shstrtab, then the section headers ---------------

enum class Bits { b32, b64 };
enum class Order { little, big };

struct TestSection {
  std::string name;
  uint32_t type = 7;  // SHT_NOTE
  std::string data;
  uint64_t addralign = 4;
};

void put(std::string& bytes, size_t at, uint64_t value, size_t width, Order order = Order::little) {
  for (size_t i = 0; i < width; ++i) {
    const size_t byte = order == Order::little ? at + i : at + width - 1 - i;
    bytes[byte] = static_cast<char>((value >> (8 * i)) & 0xff);
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

// One note: namesz, descsz, type, the owner with its NUL, the descriptor, each padded to `alignment`.
std::string note(std::string_view owner, std::string_view descriptor, Order order = Order::little,
                 size_t alignment = 4) {
  std::string out(12, '\0');
  put(out, 0, owner.size() + 1, 4, order);
  put(out, 4, descriptor.size(), 4, order);
  put(out, 8, 1, 4, order);
  out.append(owner).push_back('\0');
  pad(out, alignment);
  out.append(descriptor);
  pad(out, alignment);
  return out;
}

// The note as the 575.57.08 driver writes it.
constexpr std::string_view k_json =
    R"({"format":1,"CUDA version":"12.9","driver":[535,550,560,565,570,575],"device":[1,2,7,8,9,10,11,12,13,14]})";
constexpr std::string_view k_name = ".note.cuda.fwd_compatibility";

TestSection compat_section(std::string_view json = k_json) {
  return {std::string(k_name), 7, note("NVIDIA Corporation", json)};
}

// Sections: [0] null, `sections` in order, then .shstrtab (e_shstrndx).
std::string make_elf(const std::vector<TestSection>& sections, Bits bits = Bits::b64,
                     Order order = Order::little) {
  const bool b64 = bits == Bits::b64;
  std::string out(b64 ? 64 : 52, '\0');
  out.replace(0, 4,
              "\x7f"
              "ELF");
  out[4] = b64 ? 2 : 1;                     // EI_CLASS
  out[5] = order == Order::little ? 1 : 2;  // EI_DATA
  out[6] = 1;                               // EI_VERSION
  std::string names(1, '\0');
  std::vector<std::array<uint64_t, 5>> headers{{0, 0, 0, 0, 0}};  // name, type, offset, size, addralign
  auto add = [&](std::string_view name, uint64_t type, std::string_view data, uint64_t addralign) {
    pad(out, 8);
    headers.push_back({names.size(), type, out.size(), data.size(), addralign});
    names.append(name).push_back('\0');
    out.append(data);
  };
  for (const auto& section : sections) {
    add(section.name, section.type, section.data, section.addralign);
  }
  const std::string shstrtab_name = ".shstrtab";
  add(shstrtab_name, 3, names + shstrtab_name + '\0', 1);  // the table holds its own name too
  pad(out, 8);
  const size_t shoff = out.size();
  const size_t entry = b64 ? 64 : 40;
  const size_t word = b64 ? 8 : 4;
  for (const auto& [name, type, offset, size, addralign] : headers) {
    std::string header(entry, '\0');
    put(header, 0, name, 4, order);
    put(header, 4, type, 4, order);
    put(header, b64 ? 24 : 16, offset, word, order);
    put(header, b64 ? 32 : 20, size, word, order);
    put(header, b64 ? 48 : 32, addralign, word, order);
    out += header;
  }
  put(out, b64 ? 40 : 32, shoff, word, order);            // e_shoff
  put(out, b64 ? 58 : 46, entry, 2, order);               // e_shentsize
  put(out, b64 ? 60 : 48, headers.size(), 2, order);      // e_shnum
  put(out, b64 ? 62 : 50, headers.size() - 1, 2, order);  // e_shstrndx
  return out;
}

// ELF64 field positions used to break files.
constexpr size_t k_shoff = 40, k_shentsize = 58, k_shnum = 60, k_shstrndx = 62;
constexpr size_t k_sh_name = 0, k_sh_offset = 24, k_sh_size = 32;

// Where section `index`'s header field `field` is in an ELF64 file.
size_t field_of(const std::string& elf, size_t index, size_t field) {
  return static_cast<size_t>(get(elf, k_shoff, 8)) + 64 * index + field;
}

std::string list(const std::vector<int64_t>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    out += (i ? "," : "") + std::to_string(items[i]);
  }
  return out + "]";
}

// "note 12.9 [535,550]" (format and devices when not 1 and []: "note 12.9 [535] format 0 device [1]"),
// "absent" or "error: <message>".
std::string parsed(std::string_view bytes) {
  const auto result = parse_cuda_compat_note(bytes);
  if (!result) {
    return "error: " + result.error().message;
  }
  if (!*result) {
    return "absent";
  }
  const auto& note = **result;
  std::string out = "note " + note.cuda_version + " " + list(note.driver_majors);
  if (note.format != 1) {
    out += " format " + std::to_string(note.format);
  }
  if (!note.devices.empty()) {
    out += " device " + list(note.devices);
  }
  return out;
}

std::string parsed_json(std::string_view json) {
  return parsed(make_elf({compat_section(json)}));
}

std::string data_file(const std::string& name) {
  return read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/cuda_compat/" + name).value_or("<missing>");
}

const std::string k_error = "error: section .note.cuda.fwd_compatibility: ";

// --- the libraries NVIDIA tests its reader with (tests/data/cuda_compat) -------------------------------

TEST(CudaCompatNote, ReadsTheNotesOfRealDrivers) {
  const auto n575 = parse_cuda_compat_note(data_file("libcuda.so.575.57.08"));
  ASSERT_TRUE(n575) << n575.error().message;
  EXPECT_EQ(*n575,
            (CudaCompatNote{1, "12.9", {535, 550, 560, 565, 570, 575}, {1, 2, 7, 8, 9, 10, 11, 12, 13, 14}}));
  const auto n590 = parse_cuda_compat_note(data_file("libcuda.so.590.44.01"));
  ASSERT_TRUE(n590) << n590.error().message;
  EXPECT_EQ(*n590,
            (CudaCompatNote{1, "13.1", {535, 550, 570, 575, 580, 590}, {1, 2, 7, 8, 9, 10, 11, 12, 13, 14}}));
}

TEST(CudaCompatNote, ReadsADescriptorThatRunsPastItsSectionUpToTheSectionEnd) {
  // descsz 41, 39 bytes left in the section: {"format":1,"CUDA version":"13.2"} and NULs.
  EXPECT_EQ(parsed(data_file("libcuda.orin.13.2.1.so.1.1")), "note 13.2 []");
}

TEST(CudaCompatNote, ANoteThatIsNotJsonIsAnError) {
  EXPECT_EQ(parsed(data_file("libcuda.invalid.json.so.99.88")),
            k_error +
                "note descriptor: syntax error while parsing object key - unexpected '}'; expected string "
                "literal at line 1, column 35");
}

// --- well-formed files -------------------------------------------------------------------------------

TEST(CudaCompatNote, ReadsElf32Elf64AndBigEndianFiles) {
  EXPECT_EQ(parsed(make_elf({{".text", 1, "code"}, compat_section()})),
            "note 12.9 [535,550,560,565,570,575] device [1,2,7,8,9,10,11,12,13,14]");
  EXPECT_EQ(parsed(make_elf({{".text", 1, "code"}, compat_section()}, Bits::b32)),
            "note 12.9 [535,550,560,565,570,575] device [1,2,7,8,9,10,11,12,13,14]");
  for (const auto bits : {Bits::b32, Bits::b64}) {
    const TestSection section{std::string(k_name), 7, note("NVIDIA Corporation", k_json, Order::big)};
    EXPECT_EQ(parsed(make_elf({section}, bits, Order::big)),
              "note 12.9 [535,550,560,565,570,575] device [1,2,7,8,9,10,11,12,13,14]");
  }
}

TEST(CudaCompatNote, MatchesKeysAsGoMatchesStructFields) {
  // Exactly, or ignoring case; U+017F (long s) folds to s as in Go. Other keys are ignored.
  for (const char* json :
       {R"({"CUDA Version":"12.4","Driver":[535]})", R"({"cuda version":"12.4","driver":[535]})",
        R"({"CUDA VERSION":"12.4","DRIVER":[535]})", R"({"cUdA vErSiOn":"12.4","dRiVeR":[535]})",
        "{\"CUDA Ver\xc5\xbfion\":\"12.4\",\"Driver\":[535]}"}) {
    EXPECT_EQ(parsed_json(json), "note 12.4 [535] format 0") << json;
  }
  for (const char* json : {R"({"CUDA_Version":"12.4","Drivers":[535]})", R"({"CUDAVersion":"12.4"})",
                           R"({"cuda  version":"12.4"})", R"({" CUDA Version":"12.4"})"}) {
    EXPECT_EQ(parsed_json(json), "note  [] format 0") << json;
  }
  EXPECT_EQ(parsed_json(R"({"FORMAT":2,"Device":[7]})"), "note  [] format 2 device [7]");
}

TEST(CudaCompatNote, TakesKeysInDocumentOrderSoTheLastDuplicateWins) {
  EXPECT_EQ(parsed_json(R"({"CUDA Version":"12.4","cuda version":"12.9"})"), "note 12.9 [] format 0");
  EXPECT_EQ(parsed_json(R"({"cuda version":"12.9","CUDA Version":"12.4"})"), "note 12.4 [] format 0");
  EXPECT_EQ(parsed_json(R"({"driver":[535,550],"Driver":[570]})"), "note  [570] format 0");
}

TEST(CudaCompatNote, IgnoresOtherKeysWhateverTheirValue) {
  EXPECT_EQ(parsed_json(R"({"x":{"driver":"no","y":[[{}],null,1.5,-2e3,"s",true]},"CUDA version":"12.9",)"
                        R"("z":[{"CUDA version":1}]})"),
            "note 12.9 [] format 0");
}

TEST(CudaCompatNote, AbsentKeysLeaveTheirFieldsEmpty) {
  EXPECT_EQ(parsed_json("{}"), "note  [] format 0");
  EXPECT_EQ(parsed_json("null"), "note  [] format 0");  // Go leaves the struct as it is
  EXPECT_EQ(parsed_json(" \t\n{ } \r\n"), "note  [] format 0");
}

TEST(CudaCompatNote, NullKeepsANumberOrAStringAndEmptiesAList) {
  EXPECT_EQ(parsed_json(R"({"format":1,"format":null,"CUDA version":"12.9","CUDA version":null,)"
                        R"("driver":[535],"driver":null})"),
            "note 12.9 []");
}

// A Go slice decoded again keeps the memory of its earlier items; a null item leaves what is there.
TEST(CudaCompatNote, NullItemsOfAListAreWhatGoLeavesThere) {
  EXPECT_EQ(parsed_json(R"({"driver":[null,535]})"), "note  [0,535] format 0");
  EXPECT_EQ(parsed_json(R"({"driver":[1,2,3],"driver":[null]})"), "note  [1] format 0");
  EXPECT_EQ(parsed_json(R"({"driver":[5,6],"driver":[7],"driver":[8,null]})"), "note  [8,6] format 0");
  EXPECT_EQ(parsed_json(R"({"driver":[5],"driver":[],"driver":[null]})"), "note  [0] format 0");
  EXPECT_EQ(parsed_json(R"({"driver":[5],"driver":null,"driver":[null]})"), "note  [0] format 0");
}

TEST(CudaCompatNote, NumbersAreWholeNumbersOf64Bits) {
  EXPECT_EQ(parsed_json(R"({"driver":[-1,0,-0,9223372036854775807,-9223372036854775808],"format":-3})"),
            "note  [-1,0,0,9223372036854775807,-9223372036854775808] format -3");
}

TEST(CudaCompatNote, AValueOfTheWrongTypeIsAnError) {
  const std::string prefix = k_error + "note descriptor";
  const std::string whole = ", expected a whole number of 64 bits";
  EXPECT_EQ(parsed_json(R"({"driver":["535"]})"), prefix + ": \"driver\"[0] is \"535\"" + whole);
  EXPECT_EQ(parsed_json(R"({"driver":[535,1.0]})"), prefix + ": \"driver\"[1] is 1.0" + whole);
  EXPECT_EQ(parsed_json(R"({"driver":[1e2]})"), prefix + ": \"driver\"[0] is 1e2" + whole);
  EXPECT_EQ(parsed_json(R"({"driver":[9223372036854775808]})"),
            prefix + ": \"driver\"[0] is 9223372036854775808" + whole);
  EXPECT_EQ(parsed_json(R"({"driver":[-9223372036854775809]})"),
            prefix + ": \"driver\"[0] is -9223372036854775809" + whole);
  EXPECT_EQ(parsed_json(R"({"Driver":[true]})"), prefix + ": \"Driver\"[0] is a boolean" + whole);
  EXPECT_EQ(parsed_json(R"({"driver":[[535]]})"), prefix + ": \"driver\"[0] is an array" + whole);
  EXPECT_EQ(parsed_json(R"({"device":[{}]})"), prefix + ": \"device\"[0] is an object" + whole);
  EXPECT_EQ(parsed_json(R"({"driver":"535"})"),
            prefix + ": \"driver\" is \"535\", expected an array of whole numbers");
  EXPECT_EQ(parsed_json(R"({"driver":{}})"),
            prefix + ": \"driver\" is an object, expected an array of whole numbers");
  EXPECT_EQ(parsed_json(R"({"CUDA version":12.9})"),
            prefix + ": \"CUDA version\" is 12.9, expected a string");
  EXPECT_EQ(parsed_json(R"({"CUDA version":["12.9"]})"),
            prefix + ": \"CUDA version\" is an array, expected a string");
  EXPECT_EQ(parsed_json(R"({"format":"1"})"), prefix + ": \"format\" is \"1\"" + whole);
  EXPECT_EQ(parsed_json(R"({"format":1.5})"), prefix + ": \"format\" is 1.5" + whole);
  EXPECT_EQ(parsed_json(R"({"format":false})"), prefix + ": \"format\" is a boolean" + whole);
  EXPECT_EQ(parsed_json("[535]"), prefix + " is an array, expected an object");
  EXPECT_EQ(parsed_json(R"("12.9")"), prefix + " is \"12.9\", expected an object");
  EXPECT_EQ(parsed_json("1"), prefix + " is 1, expected an object");
  EXPECT_EQ(parsed_json("true"), prefix + " is a boolean, expected an object");
}

TEST(CudaCompatNote, TextThatIsNotJsonIsAnError) {
  const std::string prefix = k_error + "note descriptor: syntax error while parsing ";
  EXPECT_EQ(parsed_json(R"({"CUDA version":"12.9",})"),
            prefix + "object key - unexpected '}'; expected string literal at line 1, column 24");
  EXPECT_EQ(
      parsed_json(R"({"driver":[535]} x)"),
      prefix + "value - invalid literal; last read: '535]} x'; expected end of input at line 1, column 18");
}

TEST(CudaCompatNote, NestsAtMostAsDeepAsGoAllows) {
  const auto nested = [](size_t levels) {
    return R"({"x":)" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  EXPECT_EQ(parsed_json(nested(k_cuda_compat_note_depth)), "note  [] format 0");
  EXPECT_EQ(parsed_json(nested(k_cuda_compat_note_depth + 1)),
            k_error + "note descriptor: nesting deeper than 10000 levels");
}

TEST(CudaCompatNote, RejectsAnOversizedDescriptor) {
  const std::string json = std::string(k_json) + std::string(k_cuda_compat_note_limit, ' ');
  EXPECT_EQ(parsed_json(json), k_error + "note descriptor is " + std::to_string(json.size()) +
                                   " bytes, more than the limit of 65536");
}

// --- the note within its section ---------------------------------------------------------------------

TEST(CudaCompatNote, TrimsNulsFromBothEndsOfTheDescriptor) {
  EXPECT_EQ(parsed_json(std::string(3, '\0') + R"({"CUDA version":"12.9"})" + std::string(5, '\0')),
            "note 12.9 [] format 0");
  // Nothing but NULs: empty text, not JSON.
  EXPECT_EQ(parsed_json(std::string(8, '\0')),
            k_error +
                "note descriptor: syntax error while parsing value - unexpected end of input; expected "
                "'[', '{', or a literal at line 1, column 1");
}

TEST(CudaCompatNote, ClampsTheDescriptorToTheSection) {
  const std::string json = R"({"CUDA version":"12.9"})";  // 23 bytes
  auto data = note("NVIDIA Corporation", json);
  put(data, 4, 4096, 4);  // descsz far past the section
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data}})), "note 12.9 [] format 0");
  // A descriptor that starts at or past the section end is the section's last byte, as NVIDIA reads it:
  // here the 'n' that ends an owner written without its NUL.
  std::string owner_only(12, '\0');
  put(owner_only, 0, 18, 4);
  put(owner_only, 4, json.size(), 4);
  owner_only += "NVIDIA Corporation";
  EXPECT_EQ(
      parsed(make_elf({{std::string(k_name), 7, owner_only}})),
      k_error +
          "note descriptor: syntax error while parsing value - invalid literal; last read: 'n' at line 1, "
          "column 2");
}

// The descriptor starts at 12 + namesz rounded up to sh_addralign, as NVIDIA reads it (not the gABI's
// 12 + namesz rounded up from the note's start, which differs for 8).
TEST(CudaCompatNote, PadsTheOwnerToTheSectionAlignment) {
  // sh_addralign 8: the owner takes 24 bytes, the descriptor starts at 36.
  std::string data(12, '\0');
  put(data, 0, 19, 4);
  put(data, 4, k_json.size(), 4);
  data += std::string("NVIDIA Corporation\0\0\0\0\0\0", 24);
  data += k_json;
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data, 8}})),
            "note 12.9 [535,550,560,565,570,575] device [1,2,7,8,9,10,11,12,13,14]");
  // A note padded as the gABI pads 8-byte notes (the descriptor at 32): the owner's 24 bytes take the
  // descriptor's first 4, so the owner is not NVIDIA's: no note.
  EXPECT_EQ(
      parsed(make_elf({{std::string(k_name), 7, note("NVIDIA Corporation", k_json, Order::little, 8), 8}})),
      "absent");
  // sh_addralign 1: no padding, the descriptor right after the owner's NUL, at 31.
  data = std::string(12, '\0');
  put(data, 0, 19, 4);
  put(data, 4, k_json.size(), 4);
  data += std::string("NVIDIA Corporation\0", 19);
  data += k_json;
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data, 1}})),
            "note 12.9 [535,550,560,565,570,575] device [1,2,7,8,9,10,11,12,13,14]");
  // ...so a note padded to 4 loses its last byte: read from the padding NUL at 31, for descsz bytes.
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, note("NVIDIA Corporation", k_json), 1}})),
            k_error +
                "note descriptor: syntax error while parsing object - unexpected end of input; expected "
                "'}' at line 1, column 105");
  // sh_addralign 0: rounded in 32 bits, the owner takes 0 bytes: not NVIDIA's.
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, note("NVIDIA Corporation", k_json), 0}})), "absent");
  // An alignment above 32 bits counts by its low 32 bits: 2^32 + 4 is 4.
  EXPECT_EQ(parsed(make_elf(
                {{std::string(k_name), 7, note("NVIDIA Corporation", k_json), (uint64_t{1} << 32) + 4}})),
            "note 12.9 [535,550,560,565,570,575] device [1,2,7,8,9,10,11,12,13,14]");
}

// --- no note -----------------------------------------------------------------------------------------

TEST(CudaCompatNote, AbsentWithoutTheSection) {
  EXPECT_EQ(parsed(make_elf({{".text", 1, "code"}, {".note.gnu.build-id", 7, note("GNU", "abcd")}})),
            "absent");
  EXPECT_EQ(parsed(make_elf({}, Bits::b32)), "absent");
  // A section of the name that is not SHT_NOTE is not the note.
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 1, note("NVIDIA Corporation", k_json)}})), "absent");
}

TEST(CudaCompatNote, AbsentWithoutSectionHeadersOrSectionNames) {
  auto elf = make_elf({compat_section()});
  put(elf, k_shstrndx, 0, 2);
  EXPECT_EQ(parsed(elf), "absent");
  put(elf, k_shoff, 0, 8);
  EXPECT_EQ(parsed(elf), "absent");
}

TEST(CudaCompatNote, TheFirstNoteSectionOfTheNameIsTheNote) {
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 1, "not a note"},
                             compat_section(R"({"CUDA version":"12.4"})"),
                             compat_section(R"({"CUDA version":"12.9"})")})),
            "note 12.4 [] format 0");
}

// Another owner is no note, as for NVIDIA (a note chooses only among the image's own libraries).
TEST(CudaCompatNote, OnlyTheFirstNoteCountsAndOnlyIfItIsNvidias) {
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, note("NVIDIA Corp", k_json)}})), "absent");
  EXPECT_EQ(
      parsed(make_elf({{std::string(k_name), 7, note("GNU", "abcd") + note("NVIDIA Corporation", k_json)}})),
      "absent");
  EXPECT_EQ(
      parsed(make_elf({{std::string(k_name), 7,
                        note("NVIDIA Corporation", R"({"CUDA version":"12.4"})") + note("GNU", "abcd")}})),
      "note 12.4 [] format 0");
  // The owner's NULs are trimmed at both ends.
  EXPECT_EQ(
      parsed(make_elf({{std::string(k_name), 7, note(std::string("\0\0NVIDIA Corporation", 20), k_json)}})),
      "note 12.9 [535,550,560,565,570,575] device [1,2,7,8,9,10,11,12,13,14]");
}

TEST(CudaCompatNote, AbsentWithAnEmptyOwnerOrDescriptor) {
  auto data = note("NVIDIA Corporation", k_json);
  put(data, 0, 0, 4);  // namesz 0
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data}})), "absent");
  data = note("NVIDIA Corporation", k_json);
  put(data, 4, 0, 4);  // descsz 0
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data}})), "absent");
}

// --- malformed files ---------------------------------------------------------------------------------

TEST(CudaCompatNote, RejectsANoteSectionShorterThanANoteHeader) {
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, ""}})),
            k_error + "note header truncated (0 bytes, need 12)");
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, std::string(11, '\x13')}})),
            k_error + "note header truncated (11 bytes, need 12)");
}

TEST(CudaCompatNote, ReadsOwnerAndDescriptorSizesOnlyWithinTheSection) {
  // Sizes up to 2^32 - 1 are clamped to the section, never read past it.
  auto data = note("NVIDIA Corporation", k_json);
  put(data, 0, UINT32_MAX, 4);  // namesz: rounded in 32 bits, 2^32 - 1 + 3 wraps to 0: no owner
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data}})), "absent");
  data = note("NVIDIA Corporation", k_json);
  put(data, 4, UINT32_MAX, 4);
  EXPECT_EQ(parsed(make_elf({{std::string(k_name), 7, data}})),
            "note 12.9 [535,550,560,565,570,575] device [1,2,7,8,9,10,11,12,13,14]");
}

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

TEST(CudaCompatNote, RejectsOtherClassesAndDataEncodings) {
  auto elf = make_elf({compat_section()});
  elf[4] = 3;
  EXPECT_EQ(parsed(elf), "error: unsupported ELF class 3");
  elf[4] = 2;
  elf[5] = 3;
  EXPECT_EQ(parsed(elf), "error: unsupported ELF data encoding 3");
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

}  // namespace
}  // namespace gpuctk::steps
