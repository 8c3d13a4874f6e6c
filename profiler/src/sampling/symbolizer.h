// Turns code addresses of this process into readable frames (function,
// module, offset) for stack samples.
//
// dladdr() only knows exported symbols, which misses exactly the functions a
// profile is usually about: static functions and everything in an executable
// linked without -rdynamic. So the symbolizer reads /proc/self/maps itself,
// parses each mapped module's ELF symbol table (.symtab, else .dynsym) with
// the hardened reader in elf_symbols.h, and binary-searches it.
#ifndef PODSCOPE_PROFILER_SRC_SAMPLING_SYMBOLIZER_H_
#define PODSCOPE_PROFILER_SRC_SAMPLING_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "src/sampling/elf_symbols.h"

namespace podscope::profiler::sampling {

// What a frame says when the address is in no known function.
inline constexpr char kUnknownFunction[] = "<unknown>";
// The module of addresses outside any mapped file: anonymous memory (JIT
// code), [vdso], [stack], or nothing mapped at all.
inline constexpr char kAnonModule[] = "[anon]";

struct Frame {
  std::string function;  // demangled; kUnknownFunction when unknown
  std::string module;    // path of the mapped file, or kAnonModule
  // For a file-backed address, the ELF virtual address it corresponds to
  // (the address minus the module's load bias): what `addr2line -e module`
  // and llvm-symbolizer expect, stable across runs of a PIE/ASLR process.
  // For an anonymous mapping, the offset from the mapping's start; for an
  // unmapped address, the address itself.
  uint64_t module_offset = 0;
  uint64_t address = 0;
};

// One line of /proc/<pid>/maps.
struct MemoryMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  uint64_t inode = 0;
  bool readable = false;
  bool writable = false;
  bool executable = false;
  std::string path;  // empty for anonymous memory; " (deleted)" stripped
  bool deleted = false;
};

// Parses the text of /proc/<pid>/maps. Malformed lines are an error naming
// the line, since they mean we misunderstand the format.
absl::StatusOr<std::vector<MemoryMapping>> ParseProcMaps(
    std::string_view contents);
// This process's mappings now: /proc/self/maps, read and parsed.
absl::StatusOr<std::vector<MemoryMapping>> ReadSelfMaps();

// abi::__cxa_demangle for names that look mangled ("_Z..."); anything else,
// or a name the demangler rejects, comes back unchanged.
std::string Demangle(std::string_view name);

// Thread-safety: every public method takes an internal mutex, so a
// Symbolizer may be shared, but calls are serialised. The intended caller is
// the session's writer thread, which symbolises samples as it drains them;
// nothing here is async-signal-safe (it allocates and reads files).
class Symbolizer {
 public:
  Symbolizer() = default;
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The frame of `address`. An address outside every known mapping re-reads
  // /proc/self/maps first (at most every kAutoRefreshInterval), so code in a
  // library dlopen()ed after the last read is found without a Refresh().
  // Never fails: what cannot be named is kUnknownFunction.
  Frame Symbolize(uint64_t address);

  // For return addresses (every frame of a sample except the leaf): looks up
  // `address - 1`, so a call that is the last instruction of a function is
  // attributed to that function rather than to the next one, while the
  // frame still reports `address`.
  Frame SymbolizeReturnAddress(uint64_t address);

  // Re-reads /proc/self/maps now (e.g. after dlopen/dlclose). Modules that
  // are still mapped keep their parsed symbols; their ELF files are only
  // parsed when an address in them is first symbolised.
  absl::Status Refresh();

  // How often Symbolize() may re-read the maps on a miss: bounded so that a
  // stream of garbage addresses cannot turn into a stream of file reads.
  static constexpr absl::Duration kAutoRefreshInterval =
      absl::Milliseconds(100);

 private:
  struct Module {
    std::string path;
    uint64_t inode = 0;
    // /proc/self/map_files/<range> of one of its mappings: the file that is
    // really mapped, for when `path` was deleted or replaced since loading.
    std::string mapped_file_path;
    // Parsed on first use; an error (unreadable, corrupt) is kept so the
    // file is not re-read for every sample.
    std::optional<absl::StatusOr<ElfSymbolTable>> table;
    absl::flat_hash_map<size_t, std::string> demangled;  // by symbol index
  };
  struct Region {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t file_offset = 0;
    bool executable = false;
    Module* module = nullptr;  // null for anonymous memory
  };

  Frame SymbolizeLocked(uint64_t address, uint64_t lookup_address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RefreshLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const Region* FindRegion(uint64_t address) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  const ElfSymbolTable* TableOf(Module& module)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // std::mutex, not absl::Mutex: Debian's prebuilt abseil is not built with
  // ThreadSanitizer, which then cannot see absl::Mutex's synchronisation.
  std::mutex mu_;
  absl::Time last_refresh_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::vector<Region> regions_ ABSL_GUARDED_BY(mu_);  // sorted by start
  // Keyed by (path, inode): a file replaced on disk is a new module.
  absl::flat_hash_map<std::pair<std::string, uint64_t>, std::unique_ptr<Module>>
      modules_ ABSL_GUARDED_BY(mu_);
};

}  // namespace podscope::profiler::sampling

#endif  // PODSCOPE_PROFILER_SRC_SAMPLING_SYMBOLIZER_H_
