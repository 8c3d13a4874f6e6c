#include "src/sampling/symbolizer.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace podscope::profiler::sampling {
namespace {

// Reads a whole /proc file. Its size is unknown (stat says 0), so read until
// EOF; the kernel produces whole lines per read(), so the text is consistent
// line by line even while the mappings change.
absl::StatusOr<std::string> ReadProcFile(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat("open ", path));
  }
  std::string contents;
  char buffer[16384];
  while (true) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      close(fd);
      return absl::ErrnoToStatus(error, absl::StrCat("read ", path));
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return contents;
}

// Splits the next space-delimited field off `line`.
std::string_view NextField(std::string_view& line) {
  const size_t start = line.find_first_not_of(' ');
  if (start == std::string_view::npos) {
    line = {};
    return {};
  }
  line.remove_prefix(start);
  const size_t end = std::min(line.find(' '), line.size());
  std::string_view field = line.substr(0, end);
  line.remove_prefix(end);
  return field;
}

bool ParseHex(std::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *value, 16);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool ParseDecimal(std::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  auto [ptr, ec] =
      std::from_chars(text.data(), text.data() + text.size(), *value, 10);
  return ec == std::errc() && ptr == text.data() + text.size();
}

absl::Status BadMapsLine(size_t line_number, std::string_view line,
                         std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("/proc/self/maps line ", line_number, ": expected ",
                   std::string(what), " in \"", std::string(line), "\""));
}

}  // namespace

absl::StatusOr<std::vector<MemoryMapping>> ParseProcMaps(
    std::string_view contents) {
  std::vector<MemoryMapping> mappings;
  size_t line_number = 0;
  while (!contents.empty()) {
    const size_t newline = std::min(contents.find('\n'), contents.size());
    const std::string_view line = contents.substr(0, newline);
    contents.remove_prefix(std::min(newline + 1, contents.size()));
    ++line_number;
    if (line.empty()) continue;

    // start-end perms offset dev inode [path]
    std::string_view rest = line;
    const std::string_view range = NextField(rest);
    const std::string_view perms = NextField(rest);
    const std::string_view offset = NextField(rest);
    const std::string_view device = NextField(rest);
    const std::string_view inode = NextField(rest);
    MemoryMapping mapping;
    const size_t dash = range.find('-');
    if (dash == std::string_view::npos ||
        !ParseHex(range.substr(0, dash), &mapping.start) ||
        !ParseHex(range.substr(dash + 1), &mapping.end) ||
        mapping.end < mapping.start) {
      return BadMapsLine(line_number, line, "an address range start-end");
    }
    if (perms.size() != 4) {
      return BadMapsLine(line_number, line, "permissions like r-xp");
    }
    mapping.readable = perms[0] == 'r';
    mapping.writable = perms[1] == 'w';
    mapping.executable = perms[2] == 'x';
    if (!ParseHex(offset, &mapping.file_offset)) {
      return BadMapsLine(line_number, line, "a hexadecimal file offset");
    }
    if (device.find(':') == std::string_view::npos) {
      return BadMapsLine(line_number, line, "a device major:minor");
    }
    if (!ParseDecimal(inode, &mapping.inode)) {
      return BadMapsLine(line_number, line, "a decimal inode");
    }
    // The path is the rest of the line after the padding; it may itself
    // contain spaces.
    const size_t path_start = rest.find_first_not_of(' ');
    if (path_start != std::string_view::npos) {
      std::string_view path = rest.substr(path_start);
      constexpr std::string_view kDeleted = " (deleted)";
      if (path.size() > kDeleted.size() &&
          path.substr(path.size() - kDeleted.size()) == kDeleted) {
        path.remove_suffix(kDeleted.size());
        mapping.deleted = true;
      }
      mapping.path = std::string(path);
    }
    mappings.push_back(std::move(mapping));
  }
  return mappings;
}

absl::StatusOr<std::vector<MemoryMapping>> ReadSelfMaps() {
  absl::StatusOr<std::string> contents = ReadProcFile("/proc/self/maps");
  if (!contents.ok()) return contents.status();
  return ParseProcMaps(*contents);
}

std::string Demangle(std::string_view name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') {
    return std::string(name);
  }
  const std::string mangled(name);  // __cxa_demangle wants a C string
  int status = 0;
  char* demangled =
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string result =
      (status == 0 && demangled != nullptr) ? std::string(demangled) : mangled;
  std::free(demangled);
  return result;
}

Frame Symbolizer::Symbolize(uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  return SymbolizeLocked(address, address);
}

Frame Symbolizer::SymbolizeReturnAddress(uint64_t address) {
  std::lock_guard<std::mutex> lock(mu_);
  return SymbolizeLocked(address, address == 0 ? 0 : address - 1);
}

absl::Status Symbolizer::Refresh() {
  std::lock_guard<std::mutex> lock(mu_);
  return RefreshLocked();
}

Frame Symbolizer::SymbolizeLocked(uint64_t address, uint64_t lookup_address) {
  Frame frame{kUnknownFunction, kAnonModule, address, address};
  const Region* region = FindRegion(lookup_address);
  if (region == nullptr &&
      absl::Now() - last_refresh_ >= kAutoRefreshInterval) {
    // A failed refresh keeps the previous view; the frame stays unknown.
    (void)RefreshLocked();
    region = FindRegion(lookup_address);
  }
  if (region == nullptr) return frame;
  if (region->module == nullptr) {
    frame.module_offset = address - region->start;
    return frame;
  }
  Module& module = *region->module;
  frame.module = module.path;
  const uint64_t file_offset =
      lookup_address - region->start + region->file_offset;
  const ElfSymbolTable* table = region->executable ? TableOf(module) : nullptr;
  if (table == nullptr) {
    frame.module_offset = file_offset + (address - lookup_address);
    return frame;
  }
  const uint64_t vaddr =
      table->FileOffsetToVaddr(file_offset).value_or(file_offset);
  frame.module_offset = vaddr + (address - lookup_address);
  const std::optional<size_t> index = table->Find(vaddr);
  if (!index.has_value()) return frame;
  auto [it, inserted] = module.demangled.try_emplace(*index);
  if (inserted) it->second = Demangle(table->name(*index));
  frame.function = it->second;
  return frame;
}

const Symbolizer::Region* Symbolizer::FindRegion(uint64_t address) const {
  auto it =
      std::upper_bound(regions_.begin(), regions_.end(), address,
                       [](uint64_t a, const Region& r) { return a < r.start; });
  if (it == regions_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

const ElfSymbolTable* Symbolizer::TableOf(Module& module) {
  if (!module.table.has_value()) {
    // Parse the file that is actually mapped: if the path now names another
    // file (upgraded library, rebuilt binary), its symbols would be wrong, so
    // go through /proc/self/map_files, which reaches the mapped inode.
    std::string path = module.path;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || st.st_ino != module.inode) {
      path = module.mapped_file_path;
    }
    module.table = ParseElfSymbols(path);
  }
  return module.table->ok() ? &**module.table : nullptr;
}

absl::Status Symbolizer::RefreshLocked() {
  last_refresh_ = absl::Now();
  absl::StatusOr<std::vector<MemoryMapping>> mappings = ReadSelfMaps();
  if (!mappings.ok()) return mappings.status();

  std::vector<Region> regions;
  regions.reserve(mappings->size());
  absl::flat_hash_map<std::pair<std::string, uint64_t>, std::unique_ptr<Module>>
      modules;
  for (MemoryMapping& mapping : *mappings) {
    Region region{mapping.start, mapping.end, mapping.file_offset,
                  mapping.executable, nullptr};
    // "[vdso]", "[stack]", "[heap]", "anon_inode:..." and anonymous memory
    // have no file to read symbols from.
    const bool file_backed =
        !mapping.path.empty() && mapping.path[0] == '/' && mapping.inode != 0;
    if (file_backed) {
      std::pair<std::string, uint64_t> key(mapping.path, mapping.inode);
      std::unique_ptr<Module>& slot = modules[key];
      if (slot == nullptr) {
        auto existing = modules_.find(key);
        if (existing != modules_.end()) {
          slot = std::move(existing->second);
        } else {
          slot = std::make_unique<Module>();
          slot->path = mapping.path;
          slot->inode = mapping.inode;
          slot->mapped_file_path =
              absl::StrCat("/proc/self/map_files/", absl::Hex(mapping.start),
                           "-", absl::Hex(mapping.end));
        }
      }
      region.module = slot.get();
    }
    regions.push_back(region);
  }
  // The kernel lists mappings in address order; sorting keeps the binary
  // search correct even if that ever changes.
  std::sort(regions.begin(), regions.end(),
            [](const Region& a, const Region& b) { return a.start < b.start; });
  regions_ = std::move(regions);
  modules_ = std::move(modules);  // modules no longer mapped are dropped
  return absl::OkStatus();
}

}  // namespace podscope::profiler::sampling
