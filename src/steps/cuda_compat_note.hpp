#pragma once
// The `.note.cuda.fwd_compatibility` ELF note of a CUDA forward-compat library (steps/cuda_compat.hpp
// says what the note decides), read from the bytes of a container image: hostile input.
//
// The note, as NVIDIA's drivers write it (575.57.08): a section `.note.cuda.fwd_compatibility` of type
// SHT_NOTE whose note is owned by "NVIDIA Corporation" and whose descriptor is JSON padded with NULs,
//   {"format":1,"CUDA version":"12.9","driver":[535,550,560,565,570,575],"device":[1,2,7,8,9,10,11,12,13,14]}
// A Jetson Orin library (libcuda.so.1.1) carries only {"format":1,"CUDA version":"13.2"}, and declares a
// descriptor 2 bytes longer than its section. tests/data/cuda_compat holds such libraries.
//
// It is read as NVIDIA's enable-cuda-compat hook reads it (Go's debug/elf and encoding/json), so that an
// image gets the same decision from both hooks:
//  - the section is the first one of that name whose type is SHT_NOTE; there is none: no note;
//  - only the section's first note counts: namesz, descsz and type (4 bytes each, in the file's byte
//    order), then the owner, then the descriptor at 12 + namesz rounded up to the section's sh_addralign
//    (rounded as a 32-bit number, as NVIDIA does). namesz or descsz 0, or an owner other than "NVIDIA
//    Corporation" (NULs trimmed from both ends): no note;
//  - the descriptor is read clamped to the end of the section (never past it: a descriptor that starts
//    at or past the end is the section's last byte, as in NVIDIA's reader), NULs trimmed from both ends,
//    and decoded as encoding/json decodes it into
//      struct { Format int; CUDAVersion string `json:"CUDA Version"`; Driver []int; Device []int }
//    Keys match a field exactly, else ignoring case as Go does ("CUDA version", "driver", "DRIVER";
//    oci::go_equal_fold); other keys are ignored, whatever their value; keys are taken in document order,
//    so a later duplicate wins. null leaves a number or string as it was and empties a list (as Go does,
//    a null item of a list is the item that was there: 0, or what an earlier duplicate key put there).
//    A number must be a whole number that fits 64 bits (no fraction, no exponent), and a value of the
//    wrong type (driver majors as strings, "CUDA version" as a number, a document that is an array) is an
//    error, as an unmarshal error is for NVIDIA. Nesting is limited to Go's 10000 levels.
// Why a note of another owner is no note rather than an error: the note only chooses which libcuda the
// container's own programs load, from libraries the image itself ships. The image controls that anyway
// (it can leave the note out, name the file differently, set LD_LIBRARY_PATH), so refusing a note it
// wrote protects nothing, and reading it as NVIDIA does keeps an image's behaviour the same under both.
//
// Kept stricter than NVIDIA's reader, each only making a note unusable (steps/cuda_compat.hpp: a warning,
// then the rule for no note), never a crash or a read outside the buffer:
//  - the ELF checks are gpuctk's own: every header, table and section is bounds-checked before it is
//    read; extended section numbering (e_shnum 0), an e_shentsize other than the class's and ELF classes
//    other than 32 and 64 bits are refused. Go's debug/elf differs on some broken files (it also checks
//    program headers, reads extended numbering and decompresses SHF_COMPRESSED sections);
//  - a descriptor over k_cuda_compat_note_limit bytes is refused (the real ones are about 130 bytes);
//  - the JSON text is parsed by nlohmann, which refuses what Go accepts in three corners: bytes that are
//    not UTF-8 and unpaired surrogate escapes (\ud800) in strings (Go reads both as U+FFFD), and numbers
//    beyond a double's range (1e400) in values that are ignored.
// The work is bounded by the number of section headers (at most 65535) and the descriptor size.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::steps {

// What `.note.cuda.fwd_compatibility` says; a key that is absent leaves its field empty (0, "", {}).
struct CudaCompatNote {
  int64_t format = 0;                  // "format": 1 in every note so far; not used in decisions
  std::string cuda_version;            // "CUDA version": the CUDA version of the compat libraries, "12.9"
  std::vector<int64_t> driver_majors;  // "driver": host driver majors the library supports, {535, 550}
  std::vector<int64_t> devices;        // "device": not used in decisions

  bool operator==(const CudaCompatNote&) const = default;
};

// The largest note descriptor accepted.
inline constexpr size_t k_cuda_compat_note_limit = 64 * 1024;

// The deepest nesting of the descriptor's JSON (Go's encoding/json limit; the document is level 1).
inline constexpr size_t k_cuda_compat_note_depth = 10000;

// The note of the ELF file in `elf_bytes`, read as described above:
//  - nullopt when there is no note: no section headers, no section name table (e_shstrndx 0), no SHT_NOTE
//    section named `.note.cuda.fwd_compatibility`, namesz or descsz 0, or another owner;
//  - an error when the file is not a 32- or 64-bit ELF file, when a header, table or the note section does
//    not lie inside the bytes, when section names are malformed, when the section is shorter than a note
//    header, or when the descriptor is too large, is not JSON or does not decode (messages name the part:
//    "section .note.cuda.fwd_compatibility: note descriptor: \"driver\"[0] is a string, expected a whole
//    number").
// Never reads outside `elf_bytes`; no exception escapes.
Result<std::optional<CudaCompatNote>> parse_cuda_compat_note(std::string_view elf_bytes);

}  // namespace gpuctk::steps
