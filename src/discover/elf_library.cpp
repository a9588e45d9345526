#include "discover/elf_library.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "ldcache/cache_file.hpp"
#include "util/fd.hpp"

namespace gpuctk::discover {
namespace {

#if defined(__aarch64__)
constexpr uint16_t k_machine = EM_AARCH64;
#else
constexpr uint16_t k_machine = EM_X86_64;
#endif
constexpr size_t k_max_program_headers = 256;
constexpr uint64_t k_max_segment = uint64_t{64} << 10;  // dynamic section, each note segment
constexpr size_t k_max_soname = 4096;

// `size` bytes at `offset` of `fd`, or nothing when the file is shorter.
bool read_at(int fd, uint64_t offset, void* out, size_t size) {
  if (offset > static_cast<uint64_t>(INT64_MAX) - size) {
    return false;
  }
  return ::pread(fd, out, size, static_cast<off_t>(offset)) == static_cast<ssize_t>(size);
}

// Whether the note segment `phdr` holds a GNU ABI tag note (NT_GNU_ABI_TAG, name "GNU").
std::optional<bool> has_abi_tag(int fd, const Elf64_Phdr& phdr) {
  if (phdr.p_filesz > k_max_segment) {
    return std::nullopt;
  }
  std::vector<unsigned char> notes(phdr.p_filesz);
  if (!read_at(fd, phdr.p_offset, notes.data(), notes.size())) {
    return std::nullopt;
  }
  const auto align4 = [](uint64_t n) { return (n + 3) & ~uint64_t{3}; };
  uint64_t at = 0;
  while (at + sizeof(Elf64_Nhdr) <= notes.size()) {
    Elf64_Nhdr note;
    std::memcpy(&note, notes.data() + at, sizeof note);
    const uint64_t name_at = at + sizeof note;
    const uint64_t next = name_at + align4(note.n_namesz) + align4(note.n_descsz);
    if (next > notes.size()) {
      return std::nullopt;
    }
    if (note.n_type == NT_GNU_ABI_TAG && note.n_namesz == 4 &&
        std::memcmp(notes.data() + name_at, "GNU", 4) == 0) {
      return true;
    }
    at = next;
  }
  return false;
}

}  // namespace

std::optional<ElfLibraryFacts> native_library_facts(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  Elf64_Ehdr ehdr;
  if (!read_at(fd.get(), 0, &ehdr, sizeof ehdr) || std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 ||
      ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_ident[EI_DATA] != ELFDATA2LSB || ehdr.e_type != ET_DYN ||
      ehdr.e_machine != k_machine || ehdr.e_phentsize != sizeof(Elf64_Phdr) || ehdr.e_phnum == 0 ||
      ehdr.e_phnum > k_max_program_headers) {
    return std::nullopt;
  }
  std::vector<Elf64_Phdr> phdrs(ehdr.e_phnum);
  if (!read_at(fd.get(), ehdr.e_phoff, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr))) {
    return std::nullopt;
  }
  const Elf64_Phdr* dynamic = nullptr;
  bool abi_tag = false;
  for (const auto& phdr : phdrs) {
    if (phdr.p_type == PT_DYNAMIC) {
      dynamic = &phdr;
    } else if (phdr.p_type == PT_NOTE) {
      const auto tagged = has_abi_tag(fd.get(), phdr);
      if (!tagged) {
        return std::nullopt;
      }
      abi_tag = abi_tag || *tagged;
    }
  }
  if (dynamic == nullptr || dynamic->p_filesz > k_max_segment) {
    return std::nullopt;
  }
  std::vector<Elf64_Dyn> dyns(dynamic->p_filesz / sizeof(Elf64_Dyn));
  if (!read_at(fd.get(), dynamic->p_offset, dyns.data(), dyns.size() * sizeof(Elf64_Dyn))) {
    return std::nullopt;
  }
  std::optional<uint64_t> strtab;
  std::optional<uint64_t> strsz;
  std::optional<uint64_t> soname;
  for (const auto& dyn : dyns) {
    if (dyn.d_tag == DT_NULL) {
      break;
    }
    if (dyn.d_tag == DT_STRTAB) {
      strtab = dyn.d_un.d_ptr;
    } else if (dyn.d_tag == DT_STRSZ) {
      strsz = dyn.d_un.d_val;
    } else if (dyn.d_tag == DT_SONAME) {
      soname = dyn.d_un.d_val;
    }
  }
  const auto arch = ldcache::native_arch();
  if (!arch) {
    return std::nullopt;
  }
  const uint32_t flags = static_cast<uint32_t>(*arch) | static_cast<uint32_t>(ldcache::LibType::elf_libc6);
  if (!soname) {
    return ElfLibraryFacts{"", flags, abi_tag};  // ldconfig lists it under its file name
  }
  if (!strtab || !strsz || *soname >= *strsz) {
    return std::nullopt;
  }
  // The string table's file offset: through the loadable segment that holds its address.
  std::optional<uint64_t> strtab_offset;
  for (const auto& phdr : phdrs) {
    if (phdr.p_type == PT_LOAD && *strtab >= phdr.p_vaddr && *strtab - phdr.p_vaddr < phdr.p_filesz &&
        *strsz <= phdr.p_filesz - (*strtab - phdr.p_vaddr)) {
      strtab_offset = phdr.p_offset + (*strtab - phdr.p_vaddr);
      break;
    }
  }
  if (!strtab_offset) {
    return std::nullopt;
  }
  std::string name(std::min<uint64_t>(k_max_soname + 1, *strsz - *soname), '\0');
  const auto got = ::pread(fd.get(), name.data(), name.size(), static_cast<off_t>(*strtab_offset + *soname));
  if (got <= 0) {
    return std::nullopt;
  }
  name.resize(static_cast<size_t>(got));
  const auto end = name.find('\0');
  if (end == std::string::npos || end == 0) {
    return std::nullopt;
  }
  name.resize(end);
  if (name.find('/') != std::string::npos) {
    return std::nullopt;
  }
  return ElfLibraryFacts{std::move(name), flags, abi_tag};
}

}  // namespace gpuctk::discover
