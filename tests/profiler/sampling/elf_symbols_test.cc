#include "src/sampling/elf_symbols.h"

#include <elf.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

// A function the test can look for in its own .symtab: static, so it is in
// no dynamic symbol table.
static __attribute__((noinline, used)) int ElfTestLocalFunction(int x) {
  asm volatile("" : "+r"(x));
  return x * 3 + 1;
}

namespace podscope::profiler::sampling {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string WriteTempFile(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "elf_symbols_test_" +
                           std::to_string(getpid()) + "_" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

template <typename T>
T Get(const std::string& bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

template <typename T>
void Put(std::string& bytes, uint64_t offset, const T& value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

class ElfSymbolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    exe_ = ReadFile("/proc/self/exe");
    ASSERT_GT(exe_.size(), sizeof(Elf64_Ehdr));
    ehdr_ = Get<Elf64_Ehdr>(exe_, 0);
    for (int i = 0; i < ehdr_.e_shnum; ++i) {
      const uint64_t offset = ehdr_.e_shoff + i * sizeof(Elf64_Shdr);
      if (Get<Elf64_Shdr>(exe_, offset).sh_type == SHT_SYMTAB) {
        symtab_header_offset_ = offset;
      }
    }
    ASSERT_NE(symtab_header_offset_, 0u)
        << "the test executable must keep its .symtab (not stripped)";
  }

  Elf64_Shdr Symtab() const {
    return Get<Elf64_Shdr>(exe_, symtab_header_offset_);
  }

  std::string exe_;
  Elf64_Ehdr ehdr_;
  uint64_t symtab_header_offset_ = 0;
};

TEST_F(ElfSymbolsTest, ReadsTheStaticFunctionsOfTheTestExecutable) {
  auto table = ParseElfSymbols("/proc/self/exe");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(table->has_full_symtab());
  bool found = false;
  for (size_t i = 0; i < table->size(); ++i) {
    if (table->name(i) == "_ZL20ElfTestLocalFunctioni" ||
        table->name(i) == "ElfTestLocalFunction") {
      found = true;
      const auto& symbol = table->symbol(i);
      EXPECT_GT(symbol.size, 0u);
      // Any address inside the function finds it, the one past it does not
      // find it.
      EXPECT_EQ(table->Find(symbol.address), i);
      EXPECT_EQ(table->Find(symbol.address + symbol.size - 1), i);
      EXPECT_NE(table->Find(symbol.address + symbol.size), i);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(ElfTestLocalFunction(1), 4);
}

TEST_F(ElfSymbolsTest, SymbolsAreSortedAndUniqueByAddress) {
  auto table = ParseElfSymbols("/proc/self/exe");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_GT(table->size(), 100u);
  for (size_t i = 1; i < table->size(); ++i) {
    ASSERT_LT(table->symbol(i - 1).address, table->symbol(i).address);
  }
  EXPECT_FALSE(table->Find(0).has_value());
}

TEST_F(ElfSymbolsTest, TranslatesFileOffsetsThroughLoadSegments) {
  auto table = ParseElfSymbols("/proc/self/exe");
  ASSERT_TRUE(table.ok()) << table.status();
  for (int i = 0; i < ehdr_.e_phnum; ++i) {
    const auto phdr =
        Get<Elf64_Phdr>(exe_, ehdr_.e_phoff + i * ehdr_.e_phentsize);
    if (phdr.p_type != PT_LOAD || !(phdr.p_flags & PF_X)) continue;
    EXPECT_EQ(table->FileOffsetToVaddr(phdr.p_offset + 16), phdr.p_vaddr + 16);
  }
  EXPECT_FALSE(table->FileOffsetToVaddr(exe_.size() * 4).has_value());
}

TEST_F(ElfSymbolsTest, MissingFileIsNotFound) {
  auto table = ParseElfSymbols("/nonexistent/dir/libnothing.so");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(table.status().message().find("/nonexistent/dir/libnothing.so"),
            std::string::npos);
}

TEST_F(ElfSymbolsTest, NonElfAndEmptyFilesAreErrorsNamingThePath) {
  const std::string text = WriteTempFile("text", "just some text, no ELF\n");
  auto table = ParseElfSymbols(text);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find(text), std::string::npos);

  const std::string empty = WriteTempFile("empty", "");
  EXPECT_FALSE(ParseElfSymbols(empty).ok());

  EXPECT_FALSE(ParseElfSymbols("/proc/self").ok());  // a directory
  unlink(text.c_str());
  unlink(empty.c_str());
}

TEST_F(ElfSymbolsTest, TruncatedFileIsAnErrorNotACrash) {
  // Header only: the section table lies past the end.
  const std::string header_only =
      WriteTempFile("header_only", exe_.substr(0, sizeof(Elf64_Ehdr)));
  auto table = ParseElfSymbols(header_only);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss)
      << table.status();
  EXPECT_NE(table.status().message().find(header_only), std::string::npos);

  // Cut inside the section header table, which linkers put at the end.
  const std::string cut =
      WriteTempFile("cut", exe_.substr(0, ehdr_.e_shoff + 10));
  EXPECT_EQ(ParseElfSymbols(cut).status().code(), absl::StatusCode::kDataLoss);
  unlink(header_only.c_str());
  unlink(cut.c_str());
}

TEST_F(ElfSymbolsTest, WrongClassIsRejected) {
  std::string bytes = exe_;
  bytes[EI_CLASS] = ELFCLASS32;
  auto table = ParseElfSymbolsFromBuffer(bytes, "class32");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(table.status().message().find("64-bit"), std::string::npos);
}

TEST_F(ElfSymbolsTest, SymbolTablePastTheEndIsDataLoss) {
  std::string bytes = exe_;
  Elf64_Shdr symtab = Symtab();
  symtab.sh_offset = bytes.size() - 8;
  Put(bytes, symtab_header_offset_, symtab);
  auto table = ParseElfSymbolsFromBuffer(bytes, "bad_symtab");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(table.status().message().find(".symtab"), std::string::npos);

  // An offset + size that overflows 64 bits must not wrap around.
  symtab.sh_offset = ~uint64_t{0} - 4;
  Put(bytes, symtab_header_offset_, symtab);
  EXPECT_EQ(ParseElfSymbolsFromBuffer(bytes, "wrap").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(ElfSymbolsTest, BadStringTableLinkIsDataLoss) {
  std::string bytes = exe_;
  Elf64_Shdr symtab = Symtab();
  symtab.sh_link = 60000;
  Put(bytes, symtab_header_offset_, symtab);
  EXPECT_EQ(ParseElfSymbolsFromBuffer(bytes, "bad_link").status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(ElfSymbolsTest, NameOffsetPastTheStringTableIsDataLoss) {
  std::string bytes = exe_;
  const Elf64_Shdr symtab = Symtab();
  // Corrupt the name of the first function symbol.
  for (uint64_t off = symtab.sh_offset;
       off + sizeof(Elf64_Sym) <= symtab.sh_offset + symtab.sh_size;
       off += sizeof(Elf64_Sym)) {
    Elf64_Sym sym = Get<Elf64_Sym>(bytes, off);
    if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_value != 0 &&
        sym.st_shndx != SHN_UNDEF) {
      sym.st_name = 0xfffffff0u;
      Put(bytes, off, sym);
      break;
    }
  }
  auto table = ParseElfSymbolsFromBuffer(bytes, "bad_name");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(table.status().message().find("name offset"), std::string::npos);
}

TEST_F(ElfSymbolsTest, BadSectionHeaderEntrySizeIsDataLoss) {
  std::string bytes = exe_;
  Elf64_Ehdr ehdr = ehdr_;
  ehdr.e_shentsize = 10;
  Put(bytes, 0, ehdr);
  EXPECT_EQ(ParseElfSymbolsFromBuffer(bytes, "shentsize").status().code(),
            absl::StatusCode::kDataLoss);
}

// Every prefix length and many random corruptions of the headers and the
// symbol table either parse or fail cleanly; under ASan this also proves no
// read goes out of bounds.
TEST_F(ElfSymbolsTest, RandomTruncationsAndCorruptionsNeverCrash) {
  std::mt19937_64 random(20240601);
  const std::string_view whole(exe_);
  for (int i = 0; i < 300; ++i) {
    const size_t length = random() % (exe_.size() + 1);
    (void)ParseElfSymbolsFromBuffer(whole.substr(0, length), "prefix");
  }
  for (size_t length = 0; length < 256; ++length) {
    (void)ParseElfSymbolsFromBuffer(whole.substr(0, length), "short");
  }

  const Elf64_Shdr symtab = Symtab();
  const uint64_t shdr_table_size = uint64_t{ehdr_.e_shnum} * sizeof(Elf64_Shdr);
  std::string bytes = exe_;
  int failures = 0;
  for (int i = 0; i < 300; ++i) {
    // Flip a few bytes in the regions a parser trusts the most.
    std::vector<std::pair<uint64_t, char>> saved;
    for (int flips = 0; flips < 4; ++flips) {
      uint64_t offset = 0;
      switch (random() % 3) {
        case 0:
          offset = random() % sizeof(Elf64_Ehdr);
          break;
        case 1:
          offset = ehdr_.e_shoff + random() % shdr_table_size;
          break;
        default:
          offset = symtab.sh_offset + random() % symtab.sh_size;
          break;
      }
      saved.emplace_back(offset, bytes[offset]);
      bytes[offset] = static_cast<char>(random());
    }
    const auto parsed = ParseElfSymbolsFromBuffer(bytes, "fuzz");
    if (!parsed.ok()) {
      ++failures;
      // A clean failure: the status a caller can act on, naming the file.
      EXPECT_TRUE(parsed.status().code() == absl::StatusCode::kDataLoss ||
                  parsed.status().code() == absl::StatusCode::kInvalidArgument)
          << parsed.status();
      EXPECT_NE(parsed.status().message().find("fuzz"), std::string::npos)
          << parsed.status();
    }
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
      bytes[it->first] = it->second;
    }
  }
  EXPECT_GT(failures, 0);  // the corruptions were noticed at least sometimes
  // A damaged magic number is always noticed, and said to be one.
  std::string not_elf = exe_;
  not_elf[1] = 'X';
  const auto refused = ParseElfSymbolsFromBuffer(not_elf, "magic");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("magic is not an ELF file"),
            std::string::npos)
      << refused.status();
  EXPECT_TRUE(ParseElfSymbolsFromBuffer(bytes, "restored").ok());
}

}  // namespace
}  // namespace podscope::profiler::sampling
