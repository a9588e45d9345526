// The CUDA forward-compat note and decision (steps/cuda_compat_note.cpp, steps/cuda_compat.cpp): any bytes
// of a compat library give a note, no note or an error, never a read outside the input (ASan) or
// undefined behaviour. A note read is written again into a plain ELF file, with its keys spelled as
// drivers spell them, and must read back the same. The decision is total and keeps its promises for every
// host of a table, with the note and without it. Seeds: the real libraries of tests/data/cuda_compat and
// the fixture hosts' libcuda stubs (support/make_seeds.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "steps/cuda_compat.hpp"
#include "support/fuzz_support.hpp"

namespace steps = gpuctk::steps;

namespace {

void put(std::string& bytes, size_t at, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) {
    bytes[at + i] = static_cast<char>((value >> (8 * i)) & 0xff);
  }
}

// A little-endian ELF64 file whose only sections are the compat note (the way drivers write it) and the
// section name table.
std::string compat_library(const std::string& descriptor) {
  std::string note(12, '\0');
  put(note, 0, 19, 4);  // "NVIDIA Corporation" and its NUL
  put(note, 4, descriptor.size(), 4);
  note += std::string("NVIDIA Corporation\0\0", 20);
  note += descriptor;
  note.resize((note.size() + 3) / 4 * 4, '\0');
  const std::string names = std::string("\0.note.cuda.fwd_compatibility\0.shstrtab\0", 40);
  std::string elf(64, '\0');
  elf.replace(0, 7,
              "\x7f"
              "ELF\x02\x01\x01");
  const size_t note_at = elf.size();
  elf += note;
  const size_t names_at = elf.size();
  elf += names;
  elf.resize((elf.size() + 7) / 8 * 8, '\0');
  const size_t shoff = elf.size();
  elf.resize(shoff + 3 * 64, '\0');
  const auto section = [&](size_t index, uint64_t name, uint64_t type, uint64_t offset, uint64_t size) {
    const size_t at = shoff + index * 64;
    put(elf, at, name, 4);
    put(elf, at + 4, type, 4);
    put(elf, at + 24, offset, 8);
    put(elf, at + 32, size, 8);
    put(elf, at + 48, 4, 8);  // sh_addralign
  };
  section(1, 1, 7, note_at, note.size());
  section(2, 30, 3, names_at, names.size());
  put(elf, 40, shoff, 8);  // e_shoff
  put(elf, 58, 64, 2);     // e_shentsize
  put(elf, 60, 3, 2);      // e_shnum
  put(elf, 62, 2, 2);      // e_shstrndx
  return elf;
}

// The hosts and compat versions the decision is asked about: known, unknown and odd versions.
struct Case {
  const char* compat;
  steps::CudaCompatHost host;
  int64_t listed = -1;  // when not -1: with a note, a yes needs this host major in the note's list
};
const Case k_cases[] = {
    {"575.57.08", {"570.211.01", ""}, 570},
    {"575.57.08", {"575.57.08", ""}, 575},
    {"575.57.08", {"590.44.01", "12.8"}, 590},
    {"999.0.0-rc.1", {"999.0.0", ""}, 999},
    {"1.1", {"", "13.1"}},
    {"550.x", {"535.104.05", "12.2"}},
    {"575.57.08", {"v575", "x"}, 575},
    {"575.57.08", {"", "12.9"}},
    {"", {"", ""}},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto parsed = steps::parse_cuda_compat_note(bytes);
  const std::optional<steps::CudaCompatNote> note = parsed ? *parsed : std::nullopt;

  if (note) {
    // Written as a driver writes it, the note reads back the same (unless the rewrite is over the limit:
    // a null item of a list is written as the number it stands for).
    const nlohmann::json json = {{"format", note->format},
                                 {"CUDA version", note->cuda_version},
                                 {"driver", note->driver_majors},
                                 {"device", note->devices}};
    const auto descriptor = json.dump();
    if (descriptor.size() <= steps::k_cuda_compat_note_limit) {
      const auto again = steps::parse_cuda_compat_note(compat_library(descriptor));
      GPUCTK_FUZZ_CHECK(again.has_value(), again ? std::string() : again.error().message);
      GPUCTK_FUZZ_CHECK(again->has_value() && **again == *note, descriptor);
    }
  }

  for (const auto& [compat, host, listed] : k_cases) {
    const bool with_note = steps::use_cuda_compat(compat, note, host);
    const bool without = steps::use_cuda_compat(compat, std::nullopt, host);
    // Equal versions are never an upgrade; without a note the host's CUDA version means no; nothing
    // without a host version; a yes from a note, with both driver versions known, names the host branch.
    GPUCTK_FUZZ_CHECK(!(with_note && std::string_view(compat) == host.driver_version), compat);
    GPUCTK_FUZZ_CHECK(!(without && !host.cuda_version.empty()), compat);
    GPUCTK_FUZZ_CHECK(!(with_note && host.driver_version.empty() && host.cuda_version.empty()), compat);
    GPUCTK_FUZZ_CHECK(!(note && with_note && listed != -1 &&
                        std::ranges::find(note->driver_majors, listed) == note->driver_majors.end()),
                      compat);
  }
  if (note) {
    // The note's CUDA version against itself as the host's: not newer.
    GPUCTK_FUZZ_CHECK(!steps::use_cuda_compat("unknown", note, {"", note->cuda_version}), note->cuda_version);
  }
  return 0;
}
