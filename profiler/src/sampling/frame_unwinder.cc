#include "src/sampling/frame_unwinder.h"

#include <elf.h>
#include <link.h>
#include <sched.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

#include "podscope/base/coding.h"
#include "src/sampling/symbolizer.h"

namespace podscope::profiler::sampling {
namespace {

// DWARF register numbers on x86-64.
constexpr int kRbp = 6;
constexpr int kRsp = 7;
constexpr int kRip = 16;
constexpr int kRegisters = 17;

// Reads of memory the unwinder has bounds-checked itself: a stack, or an
// object's call frame information. AddressSanitizer's view (redzones
// between another frame's locals) does not apply to them.
#if defined(__clang__) || defined(__GNUC__)
#define PODSCOPE_UNWIND_NO_ASAN __attribute__((no_sanitize("address")))
#else
#define PODSCOPE_UNWIND_NO_ASAN
#endif

PODSCOPE_UNWIND_NO_ASAN uint64_t LoadWord(uintptr_t address) {
  uint64_t value;
  __builtin_memcpy(&value, reinterpret_cast<const void*>(address),
                   sizeof(value));
  return value;
}

// ---------------------------------------------------------------------------
// Reading call frame information, every read inside [p, end).
// ---------------------------------------------------------------------------
struct Cursor {
  uintptr_t p = 0;
  uintptr_t end = 0;
  bool ok = true;

  bool Has(size_t n) {
    if (!ok || n > end - p) ok = false;
    return ok;
  }
  // Little-endian, n of 1, 2, 4 or 8 bytes.
  uint64_t Fixed(size_t n) {
    if (!Has(n)) return 0;
    const auto* at = reinterpret_cast<const char*>(p);
    p += n;
    switch (n) {
      case 1:
        return static_cast<uint8_t>(*at);
      case 2:
        return base::DecodeFixed16(at);
      case 4:
        return base::DecodeFixed32(at);
      default:
        return base::DecodeFixed64(at);
    }
  }
  uint8_t U8() { return static_cast<uint8_t>(Fixed(1)); }
  uint64_t Uleb() {  // protobuf's varints are ULEB128
    uint64_t v = 0;
    const uint8_t* next =
        ok ? base::DecodeVarint64(reinterpret_cast<const uint8_t*>(p),
                                  reinterpret_cast<const uint8_t*>(end), &v)
           : nullptr;
    if (next == nullptr) {
      ok = false;
      return 0;
    }
    p = reinterpret_cast<uintptr_t>(next);
    return v;
  }
  int64_t Sleb() {
    uint64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    do {
      if (shift >= 64) {
        ok = false;
        return 0;
      }
      b = U8();
      if (!ok) return 0;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(v);
  }
  void Skip(uint64_t n) {
    if (Has(n)) p += n;
  }
};

constexpr uint8_t kPeOmit = 0xff;

// A DW_EH_PE-encoded pointer: the value forms and the pc- and data-relative
// applications that GNU and LLVM toolchains emit; anything else fails.
uint64_t ReadEncoded(Cursor& c, uint8_t encoding, uintptr_t data_base) {
  if (encoding == kPeOmit) {
    c.ok = false;
    return 0;
  }
  const uintptr_t at = c.p;
  uint64_t v = 0;
  switch (encoding & 0x0f) {
    case 0x00:
      v = c.Fixed(8);
      break;
    case 0x01:
      v = c.Uleb();
      break;
    case 0x02:
      v = c.Fixed(2);
      break;
    case 0x03:
      v = c.Fixed(4);
      break;
    case 0x04:
      v = c.Fixed(8);
      break;
    case 0x09:
      v = static_cast<uint64_t>(c.Sleb());
      break;
    case 0x0a:
      v = static_cast<uint64_t>(static_cast<int16_t>(c.Fixed(2)));
      break;
    case 0x0b:
      v = static_cast<uint64_t>(static_cast<int32_t>(c.Fixed(4)));
      break;
    case 0x0c:
      v = c.Fixed(8);
      break;
    default:
      c.ok = false;
      return 0;
  }
  switch (encoding & 0x70) {
    case 0x00:
      break;
    case 0x10:
      v += at;
      break;
    case 0x30:
      v += data_base;
      break;
    default:
      c.ok = false;
      return 0;
  }
  if (encoding & 0x80) c.ok = false;  // indirect: not for code addresses
  return v;
}

// ---------------------------------------------------------------------------
// Unwind rules: where the CFA, the return address and the caller's frame
// pointer are, at one instruction.
// ---------------------------------------------------------------------------
enum class SavedKind : uint8_t { kSame, kOffset, kUndefined, kOther };

struct SavedRule {
  SavedKind kind = SavedKind::kSame;
  int64_t offset = 0;
};

struct Rule {
  int cfa_reg = kRsp;
  bool cfa_deref = false;  // CFA = *(reg + offset)
  int64_t cfa_offset = 8;
  bool outermost = false;  // the return address is undefined
  int64_t ra_offset = -8;
  SavedKind rbp_kind = SavedKind::kSame;  // kSame, kOffset or kOther
  int64_t rbp_offset = 0;
};

// Cache words. Bit 0 marks a filled entry; bit 8 an address known to have
// no usable rule (declined without searching again).
constexpr uint64_t kFilled = 1;
constexpr uint64_t kNoRule = uint64_t{1} << 8;

bool FitsInt8Words(int64_t offset) {
  return offset % 8 == 0 && offset / 8 >= -128 && offset / 8 <= 127;
}

// 0 when the rule does not fit the cache's 64 bits (it is then used, not
// kept).
uint64_t Pack(const Rule& r) {
  if (!FitsInt8Words(r.ra_offset) || !FitsInt8Words(r.rbp_offset) ||
      r.cfa_offset < INT32_MIN || r.cfa_offset > INT32_MAX) {
    return 0;
  }
  uint64_t w = kFilled;
  w |= static_cast<uint64_t>(r.cfa_reg & 0x1f) << 1;
  w |= static_cast<uint64_t>(r.cfa_deref) << 6;
  w |= static_cast<uint64_t>(r.outermost) << 7;
  w |= static_cast<uint64_t>(r.rbp_kind == SavedKind::kSame     ? 0
                             : r.rbp_kind == SavedKind::kOffset ? 1
                                                                : 2)
       << 9;
  w |= static_cast<uint64_t>(static_cast<uint8_t>(r.ra_offset / 8)) << 11;
  w |= static_cast<uint64_t>(static_cast<uint8_t>(r.rbp_offset / 8)) << 19;
  w |= static_cast<uint64_t>(static_cast<uint32_t>(r.cfa_offset)) << 32;
  return w;
}

Rule Unpack(uint64_t w) {
  Rule r;
  r.cfa_reg = static_cast<int>((w >> 1) & 0x1f);
  r.cfa_deref = (w >> 6) & 1;
  r.outermost = (w >> 7) & 1;
  const uint64_t rbp = (w >> 9) & 3;
  r.rbp_kind = rbp == 0   ? SavedKind::kSame
               : rbp == 1 ? SavedKind::kOffset
                          : SavedKind::kOther;
  r.ra_offset = static_cast<int8_t>((w >> 11) & 0xff) * int64_t{8};
  r.rbp_offset = static_cast<int8_t>((w >> 19) & 0xff) * int64_t{8};
  r.cfa_offset = static_cast<int32_t>(w >> 32);
  return r;
}

// One common information entry, as far as unwinding needs it.
struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = kRip;
  uint8_t fde_encoding = 0;  // absptr
  bool has_augmentation_data = false;
  bool signal_frame = false;
  uintptr_t instructions = 0;
  uintptr_t end = 0;
};

// Reads an entry's length and returns the cursor past it, bounded by the
// entry, or !ok.
Cursor EntryAt(const UnwindMap& map, const UnwindMap::Object& object,
               uintptr_t at) {
  Cursor c{at, at + 4};
  if (!map.Readable(object, at, 4)) {
    c.ok = false;
    return c;
  }
  uint64_t length = c.Fixed(4);
  size_t header = 4;
  if (length == 0xffffffff) {
    if (!map.Readable(object, at, 12)) {
      c.ok = false;
      return c;
    }
    c.end = at + 12;
    length = c.Fixed(8);
    header = 12;
  }
  if (length == 0 || length > (uint64_t{1} << 30) ||
      !map.Readable(object, at, header + length)) {
    c.ok = false;
    return c;
  }
  c.end = at + header + length;
  return c;
}

bool ParseCie(const UnwindMap& map, const UnwindMap::Object& object,
              uintptr_t at, Cie* cie) {
  Cursor c = EntryAt(map, object, at);
  const bool wide = c.ok && (c.p - at) == 12;
  const uint64_t id = c.Fixed(wide ? 8 : 4);
  if (!c.ok || id != 0) return false;
  const uint8_t version = c.U8();
  if (version != 1 && version != 3 && version != 4) return false;
  char augmentation[8];
  size_t n = 0;
  for (;;) {
    const uint8_t ch = c.U8();
    if (!c.ok) return false;
    if (ch == 0) break;
    if (n + 1 >= sizeof(augmentation)) return false;
    augmentation[n++] = static_cast<char>(ch);
  }
  augmentation[n] = 0;
  if (n >= 2 && augmentation[0] == 'e' && augmentation[1] == 'h') {
    c.Skip(8);  // an old GCC's eh_ptr
  }
  if (version == 4) c.Skip(2);  // address and segment selector sizes
  cie->code_align = c.Uleb();
  cie->data_align = c.Sleb();
  cie->ra_reg = version == 1 ? c.U8() : c.Uleb();
  if (augmentation[0] == 'z') {
    cie->has_augmentation_data = true;
    const uint64_t length = c.Uleb();
    if (!c.Has(length)) return false;
    Cursor data{c.p, c.p + length};
    for (size_t i = 1; i < n && data.ok; ++i) {
      switch (augmentation[i]) {
        case 'R':
          cie->fde_encoding = data.U8();
          break;
        case 'L':
          data.U8();
          break;
        case 'P': {
          const uint8_t encoding = data.U8();
          // Only its size matters; an aligned encoding has none we know.
          if ((encoding & 0x70) == 0x50) return false;
          ReadEncoded(data, static_cast<uint8_t>(encoding & 0x7f), 0);
          break;
        }
        case 'S':
          cie->signal_frame = true;
          break;
        case 'B':
          break;
        default:
          i = n;
          break;  // the rest is skipped by its length
      }
    }
    if (!data.ok) return false;
    c.p += length;
  } else if (n != 0 && !(augmentation[0] == 'e' && augmentation[1] == 'h')) {
    return false;
  }
  if (!c.ok || cie->code_align == 0) return false;
  cie->instructions = c.p;
  cie->end = c.end;
  return true;
}

// The rules for the CFA and the two registers the unwinder follows.
struct RowState {
  bool cfa_expression = false;
  uint64_t cfa_reg = kRsp;
  int64_t cfa_offset = 8;
  bool cfa_ok = true;
  SavedRule rbp;
  SavedRule ra;
};

constexpr int kStateStack = 16;
constexpr int kMaxInstructions = 1 << 16;

struct Interpreter {
  const Cie& cie;
  uintptr_t target;
  uint64_t ra_reg;
  RowState row;
  RowState initial;  // after the CIE's instructions (DW_CFA_restore)
  RowState stack[kStateStack];
  int depth = 0;
  uintptr_t loc = 0;
  bool done = false;  // reached an address past the target

  SavedRule* RuleOf(uint64_t reg) {
    if (reg == kRbp) return &row.rbp;
    if (reg == ra_reg) return &row.ra;
    return nullptr;
  }
  const SavedRule* InitialOf(uint64_t reg) const {
    if (reg == kRbp) return &initial.rbp;
    if (reg == ra_reg) return &initial.ra;
    return nullptr;
  }
  void Set(uint64_t reg, SavedKind kind, int64_t offset = 0) {
    if (SavedRule* r = RuleOf(reg)) *r = {kind, offset};
  }
  void Advance(uint64_t delta) {
    const uintptr_t next = loc + delta * cie.code_align;
    if (next > target) done = true;
    loc = next;
  }

  // The CFA expression GCC writes for a realigned stack:
  // DW_OP_breg<n> <offset>; DW_OP_deref.
  void DefCfaExpression(Cursor& c) {
    const uint64_t length = c.Uleb();
    if (!c.Has(length)) return;
    Cursor e{c.p, c.p + length};
    c.p += length;
    const uint8_t op = e.U8();
    row.cfa_ok = false;
    if (!e.ok || op < 0x70 || op > 0x70 + 16) return;
    const int64_t offset = e.Sleb();
    const uint8_t deref = e.U8();
    if (!e.ok || deref != 0x06 || e.p != e.end) return;
    row.cfa_expression = true;
    row.cfa_reg = op - 0x70;
    row.cfa_offset = offset;
    row.cfa_ok = true;
  }

  // Runs instructions until their end or the first advance past the
  // target. False on an instruction it cannot follow.
  bool Run(Cursor c, uint8_t fde_encoding) {
    for (int count = 0; c.ok && c.p < c.end && !done; ++count) {
      if (count > kMaxInstructions) return false;
      const uint8_t op = c.U8();
      const uint8_t high = op >> 6;
      const uint8_t low = op & 0x3f;
      if (high == 1) {
        Advance(low);
        continue;
      }
      if (high == 2) {
        Set(low, SavedKind::kOffset,
            static_cast<int64_t>(c.Uleb()) * cie.data_align);
        continue;
      }
      if (high == 3) {
        if (const SavedRule* r = InitialOf(low)) *RuleOf(low) = *r;
        continue;
      }
      switch (op) {
        case 0x00:
          break;      // nop
        case 0x01: {  // set_loc
          const uintptr_t next = ReadEncoded(c, fde_encoding, 0);
          if (next > target) done = true;
          loc = next;
          break;
        }
        case 0x02:
          Advance(c.U8());
          break;
        case 0x03:
          Advance(c.Fixed(2));
          break;
        case 0x04:
          Advance(c.Fixed(4));
          break;
        case 0x05: {  // offset_extended
          const uint64_t reg = c.Uleb();
          Set(reg, SavedKind::kOffset,
              static_cast<int64_t>(c.Uleb()) * cie.data_align);
          break;
        }
        case 0x06: {  // restore_extended
          const uint64_t reg = c.Uleb();
          if (const SavedRule* r = InitialOf(reg)) *RuleOf(reg) = *r;
          break;
        }
        case 0x07:
          Set(c.Uleb(), SavedKind::kUndefined);
          break;
        case 0x08:
          Set(c.Uleb(), SavedKind::kSame);
          break;
        case 0x09: {  // register
          const uint64_t reg = c.Uleb();
          c.Uleb();
          Set(reg, SavedKind::kOther);
          break;
        }
        case 0x0a:  // remember_state
          if (depth == kStateStack) return false;
          stack[depth++] = row;
          break;
        case 0x0b:  // restore_state
          if (depth == 0) return false;
          row = stack[--depth];
          break;
        case 0x0c:  // def_cfa
          row.cfa_reg = c.Uleb();
          row.cfa_offset = static_cast<int64_t>(c.Uleb());
          row.cfa_expression = false;
          row.cfa_ok = true;
          break;
        case 0x0d:  // def_cfa_register
          row.cfa_reg = c.Uleb();
          if (row.cfa_expression) row.cfa_ok = false;
          row.cfa_expression = false;
          break;
        case 0x0e:  // def_cfa_offset
          row.cfa_offset = static_cast<int64_t>(c.Uleb());
          if (row.cfa_expression) row.cfa_ok = false;
          break;
        case 0x0f:
          DefCfaExpression(c);
          break;
        case 0x10:    // expression
        case 0x16: {  // val_expression
          const uint64_t reg = c.Uleb();
          c.Skip(c.Uleb());
          Set(reg, SavedKind::kOther);
          break;
        }
        case 0x11: {  // offset_extended_sf
          const uint64_t reg = c.Uleb();
          Set(reg, SavedKind::kOffset, c.Sleb() * cie.data_align);
          break;
        }
        case 0x12:  // def_cfa_sf
          row.cfa_reg = c.Uleb();
          row.cfa_offset = c.Sleb() * cie.data_align;
          row.cfa_expression = false;
          row.cfa_ok = true;
          break;
        case 0x13:  // def_cfa_offset_sf
          row.cfa_offset = c.Sleb() * cie.data_align;
          if (row.cfa_expression) row.cfa_ok = false;
          break;
        case 0x14: {  // val_offset
          const uint64_t reg = c.Uleb();
          c.Uleb();
          Set(reg, SavedKind::kOther);
          break;
        }
        case 0x15: {  // val_offset_sf
          const uint64_t reg = c.Uleb();
          c.Sleb();
          Set(reg, SavedKind::kOther);
          break;
        }
        case 0x2e:
          c.Uleb();
          break;      // GNU_args_size
        case 0x2f: {  // GNU_negative_offset_extended
          const uint64_t reg = c.Uleb();
          Set(reg, SavedKind::kOffset,
              -static_cast<int64_t>(c.Uleb()) * cie.data_align);
          break;
        }
        default:
          return false;
      }
    }
    return c.ok;
  }
};

// The rule at `ip` from the object's call frame information, or false.
bool ComputeRule(const UnwindMap& map, uintptr_t ip, Rule* rule) {
  const UnwindMap::Code* code = map.FindCode(ip);
  if (code == nullptr) return false;
  const UnwindMap::Object& object = map.object(code->object);
  if (object.eh_frame_hdr == 0 || object.count == 0) return false;

  // The last table entry whose initial location is <= ip.
  const uintptr_t hdr = object.eh_frame_hdr;
  auto pc_at = [&](uint32_t i) {
    return hdr + static_cast<int64_t>(static_cast<int32_t>(
                     LoadWord(object.table + 8 * uint64_t{i}) & 0xffffffff));
  };
  uint32_t lo = 0;
  uint32_t hi = object.count;
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (pc_at(mid) <= ip) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  if (pc_at(lo) > ip) return false;
  const uintptr_t fde =
      hdr + static_cast<int64_t>(static_cast<int32_t>(
                LoadWord(object.table + 8 * uint64_t{lo}) >> 32));

  Cursor c = EntryAt(map, object, fde);
  if (!c.ok) return false;
  const bool wide = (c.p - fde) == 12;
  const uintptr_t cie_field = c.p;
  const uint64_t cie_pointer = c.Fixed(wide ? 8 : 4);
  if (!c.ok || cie_pointer == 0 || cie_pointer > cie_field) return false;
  Cie cie;
  if (!ParseCie(map, object, cie_field - cie_pointer, &cie)) return false;
  if (cie.signal_frame) return false;
  const uintptr_t pc_begin = ReadEncoded(c, cie.fde_encoding, 0);
  const uint64_t pc_range =
      ReadEncoded(c, static_cast<uint8_t>(cie.fde_encoding & 0x0f), 0);
  if (!c.ok || ip < pc_begin || ip - pc_begin >= pc_range) return false;
  if (cie.has_augmentation_data) c.Skip(c.Uleb());
  if (!c.ok) return false;

  Interpreter run{cie, ip, cie.ra_reg};
  run.loc = pc_begin;
  if (!run.Run(Cursor{cie.instructions, cie.end}, cie.fde_encoding)) {
    return false;
  }
  run.initial = run.row;
  run.done = false;
  run.loc = pc_begin;
  if (!run.Run(Cursor{c.p, c.end}, cie.fde_encoding)) return false;

  const RowState& row = run.row;
  if (!row.cfa_ok || row.cfa_reg >= kRegisters) return false;
  rule->cfa_reg = static_cast<int>(row.cfa_reg);
  rule->cfa_deref = row.cfa_expression;
  rule->cfa_offset = row.cfa_offset;
  switch (row.ra.kind) {
    case SavedKind::kUndefined:
      rule->outermost = true;
      break;
    case SavedKind::kOffset:
      rule->ra_offset = row.ra.offset;
      break;
    default:
      return false;
  }
  rule->rbp_kind = row.rbp.kind == SavedKind::kSame     ? SavedKind::kSame
                   : row.rbp.kind == SavedKind::kOffset ? SavedKind::kOffset
                                                        : SavedKind::kOther;
  rule->rbp_offset = row.rbp.offset;
  return true;
}

// ---------------------------------------------------------------------------
// Process-wide state the handler reads.
// ---------------------------------------------------------------------------
constexpr int kCacheBits = 13;
constexpr size_t kCacheSize = size_t{1} << kCacheBits;

// Lock-free, direct-mapped: an entry is (ip ^ rule, rule), each word
// stored on its own, so a reader that sees one half of a concurrent write
// finds the check failing and takes it as a miss.
struct CacheEntry {
  std::atomic<uint64_t> check{0};
  std::atomic<uint64_t> rule{0};
};
CacheEntry g_cache[kCacheSize];

std::atomic<const UnwindMap*> g_map{nullptr};
std::atomic<int> g_readers{0};

std::atomic<uint64_t> g_unwound{0};
std::atomic<uint64_t> g_declined{0};
std::atomic<uint64_t> g_computed{0};

size_t Bucket(uint64_t ip) {
  return static_cast<size_t>((ip * 0x9E3779B97F4A7C15ull) >> (64 - kCacheBits));
}

// The rule at `ip`, from the cache or computed (and then cached).
bool FindRule(const UnwindMap& map, uintptr_t ip, Rule* rule) {
  CacheEntry& e = g_cache[Bucket(ip)];
  const uint64_t word = e.rule.load(std::memory_order_relaxed);
  const uint64_t check = e.check.load(std::memory_order_relaxed);
  if (word != 0 && (check ^ word) == ip) {
    if (word & kNoRule) return false;
    *rule = Unpack(word);
    return true;
  }
  g_computed.fetch_add(1, std::memory_order_relaxed);
  const bool found = ComputeRule(map, ip, rule);
  const uint64_t packed = found ? Pack(*rule) : (kFilled | kNoRule);
  if (packed != 0) {
    e.rule.store(0, std::memory_order_relaxed);
    e.check.store(ip ^ packed, std::memory_order_relaxed);
    e.rule.store(packed, std::memory_order_relaxed);
  }
  return found;
}

void ClearRuleCache() {
  for (CacheEntry& e : g_cache) {
    e.rule.store(0, std::memory_order_relaxed);
    e.check.store(0, std::memory_order_relaxed);
  }
}

// The walk itself, with the map held.
uint32_t Walk(const UnwindMap& map, const UnwindRegisters& registers,
              uint64_t* ips, uint32_t max_depth, StackBounds* bounds) {
  if (max_depth == 0) return 0;
  uint64_t value[kRegisters];
  std::memcpy(value, registers.value, sizeof(value));
  uint32_t known = registers.known;
  constexpr uint32_t kNeeded = (1u << kRsp) | (1u << kRip);
  if ((known & kNeeded) != kNeeded) return 0;
  uintptr_t stack_lo = 0;
  uintptr_t stack_hi = 0;
  if (bounds != nullptr &&
      (bounds->map_serial == map.serial() ||
       bounds->map_serial == kAnyUnwindMap) &&
      value[kRsp] >= bounds->lo && value[kRsp] < bounds->hi) {
    stack_lo = bounds->lo;
    stack_hi = bounds->hi;
  } else {
    if (!map.FindWritable(value[kRsp], &stack_lo, &stack_hi)) return 0;
    if (bounds != nullptr) *bounds = {map.serial(), stack_lo, stack_hi};
  }
  auto read = [&](uintptr_t address, uint64_t* out) {
    if (address < stack_lo || address > stack_hi - 8) return false;
    *out = LoadWord(address);
    return true;
  };

  uint32_t depth = 0;
  uintptr_t ip = value[kRip];
  uintptr_t lookup = ip;  // the leaf's own address; a caller's call site
  while (true) {
    ips[depth++] = ip;
    if (depth == max_depth) return depth;
    Rule rule;
    if (!FindRule(map, lookup, &rule)) return 0;
    if (rule.outermost) return depth;
    if (rule.cfa_reg >= kRegisters || !(known & (1u << rule.cfa_reg))) {
      return 0;
    }
    uint64_t cfa = value[rule.cfa_reg] + static_cast<uint64_t>(rule.cfa_offset);
    if (rule.cfa_deref && !read(cfa, &cfa)) return 0;
    // Each frame lies above the one it called, inside the stack.
    if (cfa <= value[kRsp] || cfa > stack_hi) return 0;
    uint64_t ra = 0;
    if (!read(cfa + static_cast<uint64_t>(rule.ra_offset), &ra)) return 0;
    uint32_t next_known = (1u << kRsp) | (1u << kRip);
    if (rule.rbp_kind == SavedKind::kOffset) {
      if (!read(cfa + static_cast<uint64_t>(rule.rbp_offset), &value[kRbp])) {
        return 0;
      }
      next_known |= 1u << kRbp;
    } else if (rule.rbp_kind == SavedKind::kSame) {
      next_known |= known & (1u << kRbp);
    }
    if (ra == 0) return depth;  // a thread's first frame, by convention
    known = next_known;
    value[kRsp] = cfa;
    value[kRip] = ra;
    ip = ra;
    lookup = ra - 1;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// UnwindMap
// ---------------------------------------------------------------------------
namespace {

// Whether [at, at + size) lies inside one of `count` segments.
bool InsideSegments(const UnwindMap::Segment* segments, size_t count,
                    uintptr_t at, size_t size) {
  for (size_t i = 0; i < count; ++i) {
    if (at >= segments[i].lo && at <= segments[i].hi &&
        size <= segments[i].hi - at) {
      return true;
    }
  }
  return false;
}

// The range of `sorted` (by lo, disjoint) holding `address`, or null.
template <typename Range>
const Range* FindRange(const std::vector<Range>& sorted, uintptr_t address) {
  auto it = std::upper_bound(
      sorted.begin(), sorted.end(), address,
      [](uintptr_t value, const Range& r) { return value < r.lo; });
  if (it == sorted.begin()) return nullptr;
  --it;
  return address < it->hi ? &*it : nullptr;
}

// The callbacks below run under the loader's lock. They never allocate:
// a thread sampled while it holds the allocator's lock may be waiting in
// its signal handler for the loader's lock (libunwind walks the objects),
// and allocating here would then wait for that thread forever. The vectors
// are reserved beforehand; an object that does not fit stops the walk, and
// Build() walks again with more room.
struct BuildState {
  std::vector<UnwindMap::Code>* code;
  std::vector<UnwindMap::Object>* objects;
  std::vector<UnwindMap::Segment>* segments;
  bool out_of_room = false;
};

// The search table of an object's .eh_frame_hdr, when it has the layout
// every linker writes (version 1, a datarel sdata4 table).
void ReadSearchTable(const UnwindMap::Segment* segments, size_t count,
                     uintptr_t hdr, UnwindMap::Object* object) {
  auto inside = [&](uintptr_t at, size_t size) {
    return InsideSegments(segments, count, at, size);
  };
  if (!inside(hdr, 4)) return;
  Cursor c{hdr, hdr + 4};
  const uint8_t version = c.U8();
  const uint8_t frame_encoding = c.U8();
  const uint8_t count_encoding = c.U8();
  const uint8_t table_encoding = c.U8();
  if (version != 1 || table_encoding != 0x3b || count_encoding == kPeOmit) {
    return;
  }
  // The two encoded fields are at most 8 bytes each.
  if (!inside(hdr, 20)) return;
  c.end = hdr + 20;
  ReadEncoded(c, frame_encoding, hdr);
  const uint64_t fdes = ReadEncoded(c, count_encoding, hdr);
  if (!c.ok || fdes == 0 || fdes > (uint64_t{1} << 28) ||
      !inside(c.p, fdes * 8)) {
    return;
  }
  object->eh_frame_hdr = hdr;
  object->table = c.p;
  object->count = static_cast<uint32_t>(fdes);
}

int CollectObject(struct dl_phdr_info* info, size_t, void* data) {
  auto* state = static_cast<BuildState*>(data);
  const auto headers = static_cast<size_t>(info->dlpi_phnum);
  if (state->objects->size() == state->objects->capacity() ||
      state->segments->capacity() - state->segments->size() < headers ||
      state->code->capacity() - state->code->size() < headers) {
    state->out_of_room = true;
    return 1;
  }
  UnwindMap::Object object;
  object.first_segment = static_cast<uint32_t>(state->segments->size());
  uintptr_t hdr = 0;
  const auto index = static_cast<uint32_t>(state->objects->size());
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && ph.p_memsz > 0) {
      if (ph.p_flags & PF_R) {
        state->segments->push_back({lo, lo + ph.p_memsz});
      }
      if (ph.p_flags & PF_X) {
        state->code->push_back({lo, lo + ph.p_memsz, index});
      }
    } else if (ph.p_type == PT_GNU_EH_FRAME) {
      hdr = lo;
    }
  }
  object.segments =
      static_cast<uint32_t>(state->segments->size()) - object.first_segment;
  if (hdr != 0) {
    ReadSearchTable(state->segments->data() + object.first_segment,
                    object.segments, hdr, &object);
  }
  state->objects->push_back(object);
  return 0;
}

struct LoaderCounts {
  unsigned long long adds = 0;
  unsigned long long subs = 0;
};

int ReadCounts(struct dl_phdr_info* info, size_t size, void* data) {
  auto* counts = static_cast<LoaderCounts*>(data);
  if (size >=
      offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    counts->adds = info->dlpi_adds;
    counts->subs = info->dlpi_subs;
  }
  return 1;  // the counts are the same in every entry
}

// The loader's counts, and the objects and program headers to make room
// for.
struct ObjectCounts {
  LoaderCounts loader;
  size_t objects = 0;
  size_t headers = 0;
};

int CountObjects(struct dl_phdr_info* info, size_t size, void* data) {
  auto* counts = static_cast<ObjectCounts*>(data);
  if (counts->objects == 0) ReadCounts(info, size, &counts->loader);
  ++counts->objects;
  counts->headers += static_cast<size_t>(info->dlpi_phnum);
  return 0;
}

// Private or shared writable mappings, readable too, except device
// mappings (whose reads may act on hardware); adjacent ones merged. None
// when the maps cannot be read: every walk then declines.
std::vector<UnwindMap::Segment> ReadWritableMappings() {
  std::vector<UnwindMap::Segment> out;
  absl::StatusOr<std::vector<MemoryMapping>> mappings = ReadSelfMaps();
  if (!mappings.ok()) return out;
  for (const MemoryMapping& m : *mappings) {
    if (!m.readable || !m.writable || m.end <= m.start ||
        m.path.rfind("/dev/", 0) == 0) {
      continue;
    }
    if (!out.empty() && out.back().hi == m.start) {
      out.back().hi = m.end;
    } else {
      out.push_back({m.start, m.end});
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<UnwindMap> UnwindMap::Build() {
  static std::atomic<uint64_t> serials{0};
  auto map = std::make_unique<UnwindMap>();
  map->serial_ = serials.fetch_add(1) + 1;
  ObjectCounts sizes;
  dl_iterate_phdr(CountObjects, &sizes);
  map->adds_ = sizes.loader.adds;
  map->subs_ = sizes.loader.subs;
  // Objects loaded between the count and the walk need room too: a few
  // spare, and a larger reservation whenever a walk runs out.
  for (size_t spare = 16;; spare *= 4) {
    map->code_.clear();
    map->objects_.clear();
    map->segments_.clear();
    map->code_.reserve(sizes.headers + spare * 8);
    map->objects_.reserve(sizes.objects + spare);
    map->segments_.reserve(sizes.headers + spare * 8);
    BuildState state{&map->code_, &map->objects_, &map->segments_};
    dl_iterate_phdr(CollectObject, &state);
    if (!state.out_of_room) break;
  }
  std::sort(map->code_.begin(), map->code_.end(),
            [](const Code& a, const Code& b) { return a.lo < b.lo; });
  map->writable_ = ReadWritableMappings();
  return map;
}

const UnwindMap::Code* UnwindMap::FindCode(uintptr_t ip) const {
  return FindRange(code_, ip);
}

bool UnwindMap::FindWritable(uintptr_t address, uintptr_t* lo,
                             uintptr_t* hi) const {
  const Segment* s = FindRange(writable_, address);
  if (s == nullptr) return false;
  *lo = s->lo;
  *hi = s->hi;
  return true;
}

bool UnwindMap::Readable(const Object& object, uintptr_t address,
                         size_t size) const {
  return InsideSegments(segments_.data() + object.first_segment,
                        object.segments, address, size);
}

UnwindRegisters RegistersFromUcontext(const void* ucontext) {
  UnwindRegisters r;
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
  const greg_t* g = uc->uc_mcontext.gregs;
  static constexpr int kGreg[kRegisters] = {
      REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
      REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
      REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
  for (int i = 0; i < kRegisters; ++i) {
    r.value[i] = static_cast<uint64_t>(g[kGreg[i]]);
  }
  r.known = (1u << kRegisters) - 1;
#else
  (void)ucontext;
#endif
  return r;
}

void InstallUnwindMap(std::unique_ptr<UnwindMap> map) {
  const UnwindMap* fresh = map.release();
  const UnwindMap* old = g_map.exchange(fresh, std::memory_order_seq_cst);
  if (old == nullptr) return;
  // A handler that read `old` counted itself in g_readers before reading
  // it; once the count is seen at zero, none still can. Handlers run for
  // microseconds; should the count never settle, the old map is left
  // allocated rather than freed under a reader.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(1);
  bool settled = true;
  while (g_readers.load(std::memory_order_seq_cst) != 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      settled = false;
      break;
    }
    std::this_thread::yield();
  }
  if (fresh == nullptr || fresh->adds() != old->adds() ||
      fresh->subs() != old->subs()) {
    ClearRuleCache();  // objects came or went: code may have moved
  }
  if (settled) delete old;
}

bool UnwindMapIsCurrent() {
  const UnwindMap* map = g_map.load(std::memory_order_acquire);
  if (map == nullptr) return false;
  LoaderCounts counts;
  dl_iterate_phdr(ReadCounts, &counts);
  return counts.adds == map->adds() && counts.subs == map->subs();
}

const UnwindMap* CurrentUnwindMap() {
  return g_map.load(std::memory_order_acquire);
}

uint32_t UnwindFast(const UnwindRegisters& registers, uint64_t* ips,
                    uint32_t max_depth, StackBounds* bounds) {
#if defined(__x86_64__)
  g_readers.fetch_add(1, std::memory_order_seq_cst);
  const UnwindMap* map = g_map.load(std::memory_order_seq_cst);
  const uint32_t depth =
      map == nullptr ? 0 : Walk(*map, registers, ips, max_depth, bounds);
  g_readers.fetch_sub(1, std::memory_order_release);
  (depth > 0 ? g_unwound : g_declined).fetch_add(1, std::memory_order_relaxed);
  return depth;
#else
  (void)registers;
  (void)ips;
  (void)max_depth;
  (void)bounds;
  g_declined.fetch_add(1, std::memory_order_relaxed);
  return 0;
#endif
}

FastUnwindStats GetFastUnwindStats() {
  return {g_unwound.load(std::memory_order_relaxed),
          g_declined.load(std::memory_order_relaxed),
          g_computed.load(std::memory_order_relaxed)};
}

}  // namespace podscope::profiler::sampling
