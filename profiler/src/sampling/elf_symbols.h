// A small reader for the function symbols of a 64-bit little-endian ELF file,
// written for the symbolizer: it is fed files we do not control (whatever is
// mapped into the process), so every offset and size is checked against the
// file size and a corrupt or truncated file is an error, never a crash.
//
// Only what symbolisation needs is kept: the function symbols (STT_FUNC and
// STT_GNU_IFUNC) sorted by address, and the PT_LOAD segments that translate a
// file offset (what /proc/self/maps tells us) into the virtual address space
// the symbols live in.
#ifndef PODSCOPE_PROFILER_SRC_SAMPLING_ELF_SYMBOLS_H_
#define PODSCOPE_PROFILER_SRC_SAMPLING_ELF_SYMBOLS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace podscope::profiler::sampling {

class ElfSymbolTable {
 public:
  struct Symbol {
    uint64_t address = 0;  // st_value: an ELF virtual address
    uint64_t size = 0;     // 0 when the producer did not record it
    uint32_t name_offset = 0;
  };
  struct LoadSegment {
    uint64_t file_offset = 0;
    uint64_t file_size = 0;
    uint64_t vaddr = 0;
    uint64_t mem_size = 0;
  };

  ElfSymbolTable() = default;
  ElfSymbolTable(ElfSymbolTable&&) = default;
  ElfSymbolTable& operator=(ElfSymbolTable&&) = default;

  // The index of the symbol covering `vaddr`, if any. A symbol with a size
  // covers [address, address + size); a symbol without one covers up to the
  // next symbol, which is the best we can say about hand-written assembly.
  std::optional<size_t> Find(uint64_t vaddr) const;

  const Symbol& symbol(size_t index) const { return symbols_[index]; }
  // The raw (mangled) name; valid as long as the table lives.
  std::string_view name(size_t index) const;
  size_t size() const { return symbols_.size(); }

  // Translates an offset in the file into the ELF virtual address it is
  // loaded at, through the PT_LOAD segment that contains it.
  std::optional<uint64_t> FileOffsetToVaddr(uint64_t file_offset) const;

  // True when the symbols came from .symtab (all functions, static ones
  // included), false when only .dynsym (exported functions) was available.
  bool has_full_symtab() const { return has_full_symtab_; }

 private:
  friend absl::StatusOr<ElfSymbolTable> ParseElfSymbolsFromBuffer(
      std::string_view data, const std::string& name_for_errors);

  std::vector<Symbol> symbols_;  // sorted by address, one per address
  std::string strtab_;           // copy of the string table, NUL-terminated
  std::vector<LoadSegment> segments_;
  bool has_full_symtab_ = false;
};

// Parses the function symbols of the ELF file at `path`: .symtab when the
// file has one, else .dynsym. A file with neither is valid and yields an empty
// table; a file that is not a 64-bit little-endian ELF, or whose headers point
// outside the file, is an InvalidArgument/DataLoss error naming the path.
absl::StatusOr<ElfSymbolTable> ParseElfSymbols(const std::string& path);

// The same, for an ELF image already in memory (`data` must stay valid only
// for the duration of the call). Exposed for tests and fuzzing.
absl::StatusOr<ElfSymbolTable> ParseElfSymbolsFromBuffer(
    std::string_view data, const std::string& name_for_errors);

}  // namespace podscope::profiler::sampling

#endif  // PODSCOPE_PROFILER_SRC_SAMPLING_ELF_SYMBOLS_H_
