// A stack unwinder for the sampler's signal handler, x86-64 only.
//
// libunwind costs ~10 us a sample here: it blocks and unblocks every signal
// around each of its cache and loader accesses (14 rt_sigprocmask system
// calls for one 7-frame stack), and it looks the interrupted instruction up
// in the loader's tables again on each sample. This unwinder reads only
// memory and a table built outside the handler:
//
//  - an UnwindMap, an immutable snapshot of the loaded objects' executable
//    segments and their `.eh_frame_hdr` search tables (dl_iterate_phdr), and
//    of the process's private writable mappings (/proc/self/maps), which
//    bound every read of a stack;
//  - a process-wide cache of the unwind rule at each instruction address met
//    so far (how to find the frame's CFA, its return address and the saved
//    frame pointer), computed from the DWARF call frame information the
//    first time and then found with one hash probe.
//
// Unwind() never trusts what it reads from a stack: every read lies inside
// the writable mapping that holds the interrupted stack pointer, and each
// frame's CFA must lie above the last one, so a corrupt stack ends the walk,
// never the process. It declines (returns 0) whenever it cannot vouch for
// the whole stack down to its outermost frame (a leaf in code without
// unwind information, a rule it does not implement, a stack not in the
// snapshot), and the handler then falls back to libunwind for that sample.
#ifndef PODSCOPE_PROFILER_SRC_SAMPLING_FRAME_UNWINDER_H_
#define PODSCOPE_PROFILER_SRC_SAMPLING_FRAME_UNWINDER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace podscope::profiler::sampling {

// What the unwinder may read: a snapshot of the process's code and stacks.
class UnwindMap {
 public:
  struct Segment {  // [lo, hi) of one loaded PT_LOAD segment
    uintptr_t lo = 0;
    uintptr_t hi = 0;
  };
  struct Code {  // an executable segment and its object's search table
    uintptr_t lo = 0;
    uintptr_t hi = 0;
    uint32_t object = 0;  // index into objects_
  };
  struct Object {
    uintptr_t eh_frame_hdr = 0;  // 0: the object has no search table
    uintptr_t table = 0;         // its sorted (pc, fde) pairs, datarel sdata4
    uint32_t count = 0;
    uint32_t first_segment = 0;  // its readable segments in segments_
    uint32_t segments = 0;
  };

  // Lists the loaded objects and the writable mappings now.
  static std::unique_ptr<UnwindMap> Build();
  // The loader's counts of objects added and removed when built: a map
  // whose counts still match the loader's lists the same objects.
  unsigned long long adds() const { return adds_; }
  unsigned long long subs() const { return subs_; }
  // Unique to this map among every map built in the process (never 0).
  uint64_t serial() const { return serial_; }

  // Async-signal-safe lookups (binary searches over immutable arrays).
  const Code* FindCode(uintptr_t ip) const;
  // The writable mapping holding `address`, or false.
  bool FindWritable(uintptr_t address, uintptr_t* lo, uintptr_t* hi) const;
  // Whether [address, address + size) lies inside one readable segment of
  // `object`.
  bool Readable(const Object& object, uintptr_t address, size_t size) const;
  const Object& object(uint32_t index) const { return objects_[index]; }

  size_t code_ranges() const { return code_.size(); }
  size_t writable_ranges() const { return writable_.size(); }

 private:
  std::vector<Code> code_;  // sorted by lo, disjoint
  std::vector<Object> objects_;
  std::vector<Segment> segments_;  // readable segments, per object
  std::vector<Segment> writable_;  // sorted by lo, adjacent ones merged
  unsigned long long adds_ = 0;
  unsigned long long subs_ = 0;
  uint64_t serial_ = 0;
};

// Registers of the interrupted frame, by DWARF number (0..16, 16 = rip).
struct UnwindRegisters {
  static constexpr int kIp = 16;
  uint64_t value[17] = {};
  uint32_t known = 0;  // bit n: value[n] is meaningful
};

// Reads the registers out of a signal handler's ucontext (x86-64).
UnwindRegisters RegistersFromUcontext(const void* ucontext);

// Installs `map` as the one the handler reads and returns once no handler
// can still be reading the map it replaces, which it then frees. Clears the
// rule cache when the set of objects changed. Not async-signal-safe; call
// from one thread at a time (the sampler serialises it).
void InstallUnwindMap(std::unique_ptr<UnwindMap> map);
// Whether a map is installed and the loader has added and removed no object
// since it was built (its stacks may still be older).
bool UnwindMapIsCurrent();
// The map installed now (or null): for tests and for deciding whether to
// rebuild.
const UnwindMap* CurrentUnwindMap();

// The writable mapping that held a thread's stack at its last walk, and the
// serial number of the map it came from: a thread's next walk with the same
// map skips the search while its stack pointer is still inside.
// A thread that knows its own stack (pthread_getattr_np) gives bounds that
// hold whatever the map: map_serial kAnyUnwindMap.
inline constexpr uint64_t kAnyUnwindMap = ~uint64_t{0};
struct StackBounds {
  uint64_t map_serial = 0;
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};

// Async-signal-safe. Writes the interrupted frame's address and then each
// caller's return address into `ips`, leaf first, and returns how many, or
// 0 when it cannot vouch for the stack (then nothing is promised in `ips`).
// Stops at max_depth frames or at the outermost frame (its return address
// undefined in the unwind information, as at _start and a thread's start).
// `bounds`, when given, is the calling thread's own (see StackBounds).
uint32_t UnwindFast(const UnwindRegisters& registers, uint64_t* ips,
                    uint32_t max_depth, StackBounds* bounds = nullptr);

// Counts since the process started: stacks unwound by UnwindFast() and
// stacks it declined; rules computed from the call frame information (each
// other frame's rule came from the cache).
struct FastUnwindStats {
  uint64_t unwound = 0;
  uint64_t declined = 0;
  uint64_t rules_computed = 0;
};
FastUnwindStats GetFastUnwindStats();

}  // namespace podscope::profiler::sampling

#endif  // PODSCOPE_PROFILER_SRC_SAMPLING_FRAME_UNWINDER_H_
