#pragma once
// What glibc's ldconfig reads of a host driver library to list it in a linker cache: its SONAME and the
// cache flags it gives the file. Read from the HOST's driver files (discovery), for the libraries the
// host's own cache does not list (VDPAU's driver in vdpau/, which no ld.so.conf names): a container's
// update-ldcache merge (ldcache/merge.hpp) then needs no ldconfig run for them either.
//
// Contract: only a 64-bit ELF shared library of this build's machine, little-endian, gives facts (its
// DT_SONAME, or "" for one without, which ldconfig lists under its file name); flags are then libc6 | the
// native arch, as ldconfig gives every 64-bit library of x86-64 and arm64 (checked against glibc 2.36's: a
// library without libc.so.6 in DT_NEEDED is listed "(libc6,x86-64)" too). Whether it has a GNU ABI tag note
// is said (`abi_tag`): an older ldconfig made that note the entry's osversion, glibc 2.36's writes 0 (its own
// libc.so.6 carries the note and is listed with 0), so the caller decides from its host's cache whether such
// a library's entry is known. Every read is bounded (headers, at most 256 program headers, 64 KiB of dynamic
// section and of each note segment, a SONAME of at most 4096 bytes) and made with pread on a regular file
// opened without following a last link; anything else (not ELF, another class or machine, truncated, out of
// bounds) gives nothing.

#include <cstdint>
#include <optional>
#include <string>

namespace gpuctk::discover {

struct ElfLibraryFacts {
  std::string soname;    // DT_SONAME, e.g. "libvdpau_nvidia.so.1"; "" without one (ldconfig: the file name)
  uint32_t flags = 0;    // LibType | Arch (ldcache/cache_file.hpp), e.g. 0x0303 on x86-64
  bool abi_tag = false;  // a GNU ABI tag note (NT_GNU_ABI_TAG) is present
  bool operator==(const ElfLibraryFacts&) const = default;
};

std::optional<ElfLibraryFacts> native_library_facts(const std::string& path);

}  // namespace gpuctk::discover
