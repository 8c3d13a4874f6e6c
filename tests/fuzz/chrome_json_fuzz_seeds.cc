// Writes the Chrome trace JSON fuzzer's seed corpus (the documents in
// tests/fuzz/chrome_json_seeds/: every phase, a Kineto rank, a bare array
// cut short) into the folder given, for run-fuzz.sh.
#include <cstdio>
#include <filesystem>
#include <system_error>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(argv[1], ec);
  for (const auto& entry :
       fs::directory_iterator(PODSCOPE_CHROME_JSON_SEEDS, ec)) {
    fs::copy_file(entry.path(), fs::path(argv[1]) / entry.path().filename(),
                  fs::copy_options::overwrite_existing, ec);
    if (ec) {
      std::fprintf(stderr, "cannot copy %s: %s\n", entry.path().c_str(),
                   ec.message().c_str());
      return 1;
    }
  }
  return ec ? 1 : 0;
}
