#pragma once
// What glibc's ldconfig reads of a host driver library to list it in a linker cache: its SONAME and the
// cache flags it gives the file. Read from the HOST's driver files (discovery), for the libraries the
// host's own cache does not list (VDPAU's driver in vdpau/, which no ld.so.conf names): a container's
// update-ldcache merge (hook/ld_cache_merge.hpp) then needs no ldconfig run for them either.
//
// Contract: only a 64-bit ELF shared library of this build's machine, little-endian, with a DT_SONAME
// gives facts; flags are then libc6 | the native arch, as ldconfig gives every 64-bit library of x86-64
// and arm64 (checked against glibc 2.36's: a library without libc.so.6 in DT_NEEDED is listed
// "(libc6,x86-64)" too). A library with a GNU ABI tag note (which ldconfig reads as the entry's
// osversion) gives none: the merge would have to guess that field, so such a library is left to ldconfig.
// Every read is bounded (headers, at most 256 program headers, 64 KiB of dynamic section and of each note
// segment, a SONAME of at most 4096 bytes) and made with pread on a regular file opened without following
// a last link; anything else (not ELF, another class or machine, truncated, out of bounds) gives nothing.

#include <cstdint>
#include <optional>
#include <string>

namespace gpuctk::discover {

struct ElfLibraryFacts {
  std::string soname;  // DT_SONAME, e.g. "libvdpau_nvidia.so.1"
  uint32_t flags = 0;  // LibType | Arch (ld_cache.hpp), e.g. 0x0303 on x86-64
  bool operator==(const ElfLibraryFacts&) const = default;
};

std::optional<ElfLibraryFacts> native_library_facts(const std::string& path);

}  // namespace gpuctk::discover
