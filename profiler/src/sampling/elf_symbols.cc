#include "src/sampling/elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "podscope/base/status_macros.h"

namespace podscope::profiler::sampling {
namespace {

// True when [offset, offset + length) lies inside a buffer of `total` bytes;
// written so that no addition can overflow on hostile values.
bool RangeFits(uint64_t offset, uint64_t length, uint64_t total) {
  return offset <= total && length <= total - offset;
}

// Reads a T at `offset`. memcpy rather than a cast: offsets in a hostile file
// need not be aligned, and a misaligned load is undefined behaviour.
template <typename T>
bool ReadAt(std::string_view data, uint64_t offset, T* out) {
  if (!RangeFits(offset, sizeof(T), data.size())) return false;
  std::memcpy(out, data.data() + offset, sizeof(T));
  return true;
}

absl::Status Corrupt(const std::string& name, std::string_view what) {
  return absl::DataLossError(absl::StrCat("corrupt or truncated ELF file ",
                                          name, ": ", std::string(what)));
}

// Candidate symbol before aliases at one address are merged.
struct Candidate {
  uint64_t address;
  uint64_t size;
  uint32_t name_offset;
  int rank;  // lower is a better name for the address
};

// Among aliases (memcpy / __memcpy_chk-style twins at one address) prefer the
// name a user calls: global over weak over local, then fewer leading
// underscores (internal names like __libc_foo come last).
int AliasRank(unsigned char binding, std::string_view name) {
  int rank = 0;
  if (binding == STB_WEAK) rank = 100;
  if (binding == STB_LOCAL) rank = 200;
  size_t underscores = 0;
  while (underscores < name.size() && name[underscores] == '_') ++underscores;
  return rank + static_cast<int>(std::min<size_t>(underscores, 99));
}

// The section headers, with the extended numbering used by files with more
// than 0xff00 sections (e_shnum == 0, real count in section 0's sh_size).
absl::StatusOr<std::vector<Elf64_Shdr>> ReadSectionHeaders(
    std::string_view data, const Elf64_Ehdr& ehdr, const std::string& name) {
  std::vector<Elf64_Shdr> headers;
  if (ehdr.e_shoff == 0) return headers;  // no section table: nothing to read
  if (ehdr.e_shentsize != sizeof(Elf64_Shdr)) {
    return Corrupt(name, absl::StrCat("e_shentsize is ", ehdr.e_shentsize,
                                      ", expected ", sizeof(Elf64_Shdr)));
  }
  uint64_t count = ehdr.e_shnum;
  if (count == 0) {
    Elf64_Shdr first;
    if (!ReadAt(data, ehdr.e_shoff, &first)) {
      return Corrupt(name, "e_shoff points past the end of the file");
    }
    count = first.sh_size;
  }
  if (count > data.size() / sizeof(Elf64_Shdr) ||
      !RangeFits(ehdr.e_shoff, count * sizeof(Elf64_Shdr), data.size())) {
    return Corrupt(name, absl::StrCat("section header table (", count,
                                      " entries at offset ", ehdr.e_shoff,
                                      ") extends past the end of the file"));
  }
  headers.resize(count);
  std::memcpy(headers.data(), data.data() + ehdr.e_shoff,
              count * sizeof(Elf64_Shdr));
  return headers;
}

absl::StatusOr<std::vector<ElfSymbolTable::LoadSegment>> ReadLoadSegments(
    std::string_view data, const Elf64_Ehdr& ehdr,
    const std::vector<Elf64_Shdr>& sections, const std::string& name) {
  std::vector<ElfSymbolTable::LoadSegment> segments;
  uint64_t count = ehdr.e_phnum;
  if (count == PN_XNUM && !sections.empty()) count = sections[0].sh_info;
  if (count == 0) return segments;
  if (ehdr.e_phentsize != sizeof(Elf64_Phdr)) {
    return Corrupt(name, absl::StrCat("e_phentsize is ", ehdr.e_phentsize,
                                      ", expected ", sizeof(Elf64_Phdr)));
  }
  if (count > data.size() / sizeof(Elf64_Phdr) ||
      !RangeFits(ehdr.e_phoff, count * sizeof(Elf64_Phdr), data.size())) {
    return Corrupt(name, absl::StrCat("program header table (", count,
                                      " entries at offset ", ehdr.e_phoff,
                                      ") extends past the end of the file"));
  }
  for (uint64_t i = 0; i < count; ++i) {
    Elf64_Phdr phdr;
    ReadAt(data, ehdr.e_phoff + i * sizeof(Elf64_Phdr), &phdr);
    if (phdr.p_type != PT_LOAD) continue;
    // Separate debug files keep the program headers of the original but not
    // its bytes, so segments are not required to fit in this file.
    segments.push_back({phdr.p_offset, phdr.p_filesz, phdr.p_vaddr,
                        std::max(phdr.p_memsz, phdr.p_filesz)});
  }
  return segments;
}

// The functions of a symbol section (`section`, entries of Elf64_Sym size)
// with a non-empty name in `strtab` (the section's string table copied with
// a NUL after it; `strtab_size` bytes of it are the file's).
absl::StatusOr<std::vector<Candidate>> FunctionSymbols(
    std::string_view data, const Elf64_Shdr& section, uint64_t strtab_size,
    const std::string& strtab, const char* kind, const std::string& name) {
  const uint64_t count = section.sh_size / sizeof(Elf64_Sym);
  std::vector<Candidate> candidates;
  for (uint64_t i = 0; i < count; ++i) {
    Elf64_Sym sym;
    ReadAt(data, section.sh_offset + i * sizeof(Elf64_Sym), &sym);
    const unsigned char type = ELF64_ST_TYPE(sym.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
    if (sym.st_name >= strtab_size) {
      return Corrupt(
          name, absl::StrCat("symbol ", i, " of ", kind, " has name offset ",
                             sym.st_name, " past the string table (",
                             strtab_size, " bytes)"));
    }
    const std::string_view symbol_name(strtab.c_str() + sym.st_name);
    if (symbol_name.empty()) continue;
    candidates.push_back({sym.st_value, sym.st_size, sym.st_name,
                          AliasRank(ELF64_ST_BIND(sym.st_info), symbol_name)});
  }
  return candidates;
}

}  // namespace

std::optional<size_t> ElfSymbolTable::Find(uint64_t vaddr) const {
  auto it = std::upper_bound(
      symbols_.begin(), symbols_.end(), vaddr,
      [](uint64_t v, const Symbol& s) { return v < s.address; });
  if (it == symbols_.begin()) return std::nullopt;
  --it;
  const size_t index = static_cast<size_t>(it - symbols_.begin());
  if (it->size > 0) {
    if (vaddr - it->address < it->size) return index;
    return std::nullopt;
  }
  // No size: stay within the segment that holds the symbol, so a stray
  // address far past the last function is not blamed on it.
  for (const LoadSegment& segment : segments_) {
    if (it->address - segment.vaddr < segment.mem_size) {
      if (vaddr - segment.vaddr < segment.mem_size) return index;
      return std::nullopt;
    }
  }
  return index;
}

std::string_view ElfSymbolTable::name(size_t index) const {
  return std::string_view(strtab_.c_str() + symbols_[index].name_offset);
}

std::optional<uint64_t> ElfSymbolTable::FileOffsetToVaddr(
    uint64_t file_offset) const {
  for (const LoadSegment& segment : segments_) {
    if (file_offset >= segment.file_offset &&
        file_offset - segment.file_offset < segment.file_size) {
      return segment.vaddr + (file_offset - segment.file_offset);
    }
  }
  return std::nullopt;
}

absl::StatusOr<ElfSymbolTable> ParseElfSymbolsFromBuffer(
    std::string_view data, const std::string& name) {
  Elf64_Ehdr ehdr;
  if (!ReadAt(data, 0, &ehdr) ||
      std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " is not an ELF file (", data.size(), " bytes)"));
  }
  if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 ||
      ehdr.e_ident[EI_DATA] != ELFDATA2LSB) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": only 64-bit little-endian ELF files are supported (class ",
        ehdr.e_ident[EI_CLASS], ", data ", ehdr.e_ident[EI_DATA], ")"));
  }

  PODSCOPE_ASSIGN_OR_RETURN(auto sections,
                            ReadSectionHeaders(data, ehdr, name));
  PODSCOPE_ASSIGN_OR_RETURN(auto segments,
                            ReadLoadSegments(data, ehdr, sections, name));

  ElfSymbolTable table;
  table.segments_ = std::move(segments);

  // .symtab has every function, static ones included; .dynsym only what the
  // module exports, but it survives stripping.
  const Elf64_Shdr* chosen = nullptr;
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type == SHT_SYMTAB && section.sh_size > 0) {
      chosen = &section;
      table.has_full_symtab_ = true;
      break;
    }
    if (section.sh_type == SHT_DYNSYM && section.sh_size > 0 &&
        chosen == nullptr) {
      chosen = &section;
    }
  }
  if (chosen == nullptr) return table;

  const char* kind = table.has_full_symtab_ ? ".symtab" : ".dynsym";
  const uint64_t entsize =
      chosen->sh_entsize == 0 ? sizeof(Elf64_Sym) : chosen->sh_entsize;
  if (entsize != sizeof(Elf64_Sym) || chosen->sh_size % entsize != 0) {
    return Corrupt(name, absl::StrCat(kind, " has entry size ", entsize,
                                      " and size ", chosen->sh_size));
  }
  if (!RangeFits(chosen->sh_offset, chosen->sh_size, data.size())) {
    return Corrupt(name, absl::StrCat(kind, " (offset ", chosen->sh_offset,
                                      ", size ", chosen->sh_size,
                                      ") extends past the end of the file"));
  }
  if (chosen->sh_link >= sections.size()) {
    return Corrupt(
        name, absl::StrCat(kind, " links to string table ", chosen->sh_link,
                           " of ", sections.size(), " sections"));
  }
  const Elf64_Shdr& strtab = (sections)[chosen->sh_link];
  if (strtab.sh_type != SHT_STRTAB ||
      !RangeFits(strtab.sh_offset, strtab.sh_size, data.size()) ||
      strtab.sh_size > std::numeric_limits<uint32_t>::max()) {
    return Corrupt(name, absl::StrCat("string table of ", kind, " (offset ",
                                      strtab.sh_offset, ", size ",
                                      strtab.sh_size, ") is invalid"));
  }
  // A copy, so the table outlives the mapping; the extra NUL terminates a
  // last string the producer left unterminated.
  table.strtab_.assign(data.data() + strtab.sh_offset, strtab.sh_size);
  table.strtab_.push_back('\0');

  PODSCOPE_ASSIGN_OR_RETURN(auto candidates,
                            FunctionSymbols(data, *chosen, strtab.sh_size,
                                            table.strtab_, kind, name));
  // Sort by address, best alias first, then keep one symbol per address.
  std::sort(candidates.begin(), candidates.end(),
            [&](const Candidate& a, const Candidate& b) {
              return std::tie(a.address, a.rank, a.name_offset) <
                     std::tie(b.address, b.rank, b.name_offset);
            });
  table.symbols_.reserve(candidates.size());
  for (const Candidate& c : candidates) {
    if (!table.symbols_.empty() && table.symbols_.back().address == c.address) {
      // An alias with a size is better than the chosen one without.
      if (table.symbols_.back().size == 0) table.symbols_.back().size = c.size;
      continue;
    }
    table.symbols_.push_back({c.address, c.size, c.name_offset});
  }
  return table;
}

absl::StatusOr<ElfSymbolTable> ParseElfSymbols(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat("open ", path));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    return absl::ErrnoToStatus(error, absl::StrCat("fstat ", path));
  }
  // Only regular files: a FIFO or a device would block or lie about its size.
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is not a regular file"));
  }
  if (st.st_size <= 0) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, " is empty"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* mapping = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int mmap_error = errno;
  close(fd);  // the mapping keeps the file referenced
  if (mapping == MAP_FAILED) {
    return absl::ErrnoToStatus(mmap_error, absl::StrCat("mmap ", path));
  }
  // Note: a file truncated by someone else while mapped would raise SIGBUS;
  // module files of a running process are not rewritten in place in practice
  // (installers replace them by rename), so this is accepted.
  auto table = ParseElfSymbolsFromBuffer(
      std::string_view(static_cast<const char*>(mapping), size), path);
  munmap(mapping, size);
  return table;
}

}  // namespace podscope::profiler::sampling
