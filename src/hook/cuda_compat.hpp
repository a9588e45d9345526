#pragma once
// The decisions of the `enable-cuda-compat` hook, without I/O.
//
// A CUDA image may ship forward-compatibility driver libraries in /usr/local/cuda/compat
// (`libcuda.so.550.54.15` and friends). They let a newer CUDA run on an older host driver, but only on
// the host drivers they were built for, and only when they are newer than the host driver: putting an
// older (or foreign) libcuda first in the linker path breaks the container. The hook therefore decides
// from three facts: the compat library's version (its file name), the ELF note the library carries,
// and the host driver version. Reading the directory and the file is the caller's job; these functions
// only look at bytes and names, and the bytes come from a container image, so they are hostile input.
//
// The note: a section `.note.cuda.fwd_compatibility` of type SHT_NOTE holding one note owned by
// "NVIDIA Corporation" whose descriptor is JSON text (trailing NULs ignored), for example
//   {"CUDA Version": "12.4", "Driver": [470, 535]}
// "CUDA Version" is a dotted version string; "Driver" lists the host driver majors the library
// supports, each a whole number or a string of digits (470 or "470"), at most 32 bits. Other keys are
// ignored.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::hook {

// What `.note.cuda.fwd_compatibility` says.
struct CudaCompatNote {
  std::string cuda_version;             // "12.4"
  std::vector<unsigned> driver_majors;  // host driver majors the library supports, as listed: {470, 535}

  bool operator==(const CudaCompatNote&) const = default;
};

// The largest note descriptor accepted (the real one is about 50 bytes).
inline constexpr size_t k_cuda_compat_note_limit = 64 * 1024;

// The note of the ELF file in `elf_bytes`:
//  - nullopt when the file has no section headers, no section name table (e_shstrndx 0) or no section
//    named `.note.cuda.fwd_compatibility`;
//  - an error when the file is not a little-endian ELFCLASS32/ELFCLASS64 file, when a header, table,
//    section or note does not lie inside the bytes, when section names are malformed, when the section
//    occurs twice, is not SHT_NOTE, or does not hold exactly one note owned by "NVIDIA Corporation",
//    when the descriptor is over k_cuda_compat_note_limit, or when its JSON is not as described above.
// A note section owned by someone else is an error, not "no note": without a note use_cuda_compat
// falls back to a looser rule (major versions only), and a library that carries the section means to
// be restricted by it, so an unreadable restriction must not turn into no restriction.
// Extended section numbering (e_shnum 0 with section headers present) is an error: a driver library has
// nowhere near 65280 sections. Every offset and size is checked against the buffer before it is read;
// the work is bounded by the number of section headers (at most 65535) and the section size.
Result<std::optional<CudaCompatNote>> parse_cuda_compat_note(std::string_view elf_bytes);

// The version of the compat library among the names of the regular files in the compat directory: the
// one name that is exactly `libcuda.so.<MAJOR>.<MINOR>` or `libcuda.so.<MAJOR>.<MINOR>.<PATCH>` (each
// part one or more decimal digits) -> "550.54.15". nullopt when no name matches, and also when several
// do: two driver versions in one compat directory mean a broken or hand-made image, and picking one of
// them would be a guess about which the image wanted, so the hook does nothing instead.
// `libcuda.so`, `libcuda.so.1` and `libcuda.so.550.x` do not match.
std::optional<std::string> compat_library_version(const std::vector<std::string>& regular_file_names);

// Whether the compat directory goes first in the container's linker path. Versions are dotted decimal
// numbers compared component by component, a missing component counting as 0 (550.54 == 550.54.0).
//  - with a note: the host driver major must be one of note->driver_majors AND the compat version must
//    be greater than the host driver version;
//  - without a note: the compat major must be greater than the host driver major.
// false when either version is empty or not a dotted decimal number (each component fitting 64 bits).
bool use_cuda_compat(std::string_view compat_version, const std::optional<CudaCompatNote>& note,
                     std::string_view host_driver_version);

}  // namespace gpuctk::hook
