// Writes hostile trace files of 1-64 MiB (tests/trace_format/
// damaged_files.h) for run-fuzz.sh, which runs the reader fuzzer on each:
// libFuzzer's inputs stop at -max_len (64 KiB), far below the sizes where a
// reader's work or memory can grow faster than the file.
//
//   reader_large_inputs OUT_DIR SEED COUNT
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "damaged_files.h"

int main(int argc, char** argv) {
  using namespace podscope::trace_format::testing;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s OUT_DIR SEED COUNT\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const uint64_t seed = std::strtoull(argv[2], nullptr, 10);
  const int count = std::atoi(argv[3]);
  std::mt19937_64 rng(seed);
  constexpr size_t kKinds =
      sizeof(kAllDamageKinds) / sizeof(kAllDamageKinds[0]);
  for (int i = 0; i < count; ++i) {
    const DamageKind kind = kAllDamageKinds[rng() % kKinds];
    const size_t size = (size_t{1} << 20) + rng() % (size_t{63} << 20);
    const std::string path = dir + "/" + DamageKindName(kind) + "-" +
                             std::to_string(seed) + "-" + std::to_string(i);
    std::ofstream out(path, std::ios::binary);
    out << MakeDamagedFile(kind, size, rng());
    if (!out) {
      std::fprintf(stderr, "reader_large_inputs: cannot write %s\n",
                   path.c_str());
      return 1;
    }
    std::printf("%s\n", path.c_str());
  }
  return 0;
}
