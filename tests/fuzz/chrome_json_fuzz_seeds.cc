// Writes the Chrome trace JSON fuzzer's seed corpus into the folder given,
// for run-fuzz.sh: the documents in tests/fuzz/chrome_json_seeds/ (every
// phase, a Kineto rank, a bare array cut short), and each of them gzipped
// (NAME.gz) and gzipped then cut short (NAME.cut.gz), which the fuzzer
// imports through the gzip reader as they are.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

namespace {

bool Gzip(const std::string& in, std::string* out) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return false;
  }
  out->assign(deflateBound(&z, in.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const bool done = deflate(&z, Z_FINISH) == Z_STREAM_END;
  out->resize(z.total_out);
  deflateEnd(&z);
  return done;
}

bool Write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path out_dir = argv[1];
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  for (const auto& entry :
       fs::directory_iterator(PODSCOPE_CHROME_JSON_SEEDS, ec)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
    std::string gz;
    const std::string name = entry.path().filename().string();
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "cannot read %s\n", entry.path().c_str());
      return 1;
    }
    if (!Gzip(text, &gz) || !Write(out_dir / name, text) ||
        !Write(out_dir / (name + ".gz"), gz) ||
        !Write(out_dir / (name + ".cut.gz"), gz.substr(0, gz.size() / 2))) {
      std::fprintf(stderr, "cannot write the seeds of %s\n", name.c_str());
      return 1;
    }
  }
  return ec ? 1 : 0;
}
