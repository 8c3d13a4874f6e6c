#include "src/sampling/symbolizer.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

// A file-static C-style function: internal linkage, so it is in no dynamic
// symbol table and dladdr() cannot name it; only .symtab knows it.
static __attribute__((noinline, used)) int symbolizer_test_static_function(
    int x) {
  asm volatile("" : "+r"(x));
  return x + 1;
}

namespace podscope::profiler::sampling::symbolizer_test_support {

// The address of the instruction after the call to this function.
__attribute__((noinline)) uint64_t ReturnAddress() {
  return reinterpret_cast<uint64_t>(__builtin_return_address(0));
}

class Widget {
 public:
  // An address inside this member function. The volatile keeps the call
  // from becoming a tail call, which would return into our caller instead.
  __attribute__((noinline, noclone)) uint64_t AddressInside(int scale) const {
    volatile uint64_t address = ReturnAddress();
    return address + static_cast<uint64_t>(scale) * 0;
  }
};

}  // namespace podscope::profiler::sampling::symbolizer_test_support

namespace podscope::profiler::sampling {
namespace {

std::string ExecutablePath() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  return std::string(path, static_cast<size_t>(n));
}

uint64_t Address(const void* p) { return reinterpret_cast<uint64_t>(p); }

TEST(SymbolizerTest, NamesAStaticFunctionThatDladdrCannot) {
  const void* function =
      reinterpret_cast<const void*>(&symbolizer_test_static_function);
  Dl_info info{};
  ASSERT_NE(dladdr(function, &info), 0);
  EXPECT_EQ(info.dli_sname, nullptr) << "expected a non-exported function";

  Symbolizer symbolizer;
  const Frame frame = symbolizer.Symbolize(Address(function));
  EXPECT_EQ(frame.function, "symbolizer_test_static_function(int)");
  EXPECT_EQ(frame.module, ExecutablePath());
  EXPECT_EQ(frame.address, Address(function));
  // module_offset is the link-time address: for a PIE, the distance from
  // the load base, which dladdr() knows independently.
  const auto* ehdr = static_cast<const Elf64_Ehdr*>(info.dli_fbase);
  if (ehdr->e_type == ET_DYN) {
    EXPECT_EQ(frame.module_offset, Address(function) - Address(info.dli_fbase));
  } else {
    EXPECT_EQ(frame.module_offset, Address(function));
  }
  // An address in the middle of the function names it too.
  EXPECT_EQ(symbolizer.Symbolize(Address(function) + 2).function,
            "symbolizer_test_static_function(int)");
  EXPECT_EQ(symbolizer_test_static_function(1), 2);
}

TEST(SymbolizerTest, NamesAFunctionInLibc) {
  // Through libc's own handle: sanitizers interpose their own qsort.
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  void* qsort_address = dlsym(libc, "qsort");
  ASSERT_NE(qsort_address, nullptr);
  Symbolizer symbolizer;
  const Frame frame = symbolizer.Symbolize(Address(qsort_address) + 1);
  EXPECT_NE(frame.function.find("qsort"), std::string::npos) << frame.function;
  EXPECT_NE(frame.module.find("libc.so"), std::string::npos) << frame.module;
  Dl_info info{};
  ASSERT_NE(dladdr(qsort_address, &info), 0);
  EXPECT_EQ(frame.module_offset,
            Address(qsort_address) + 1 - Address(info.dli_fbase));
  dlclose(libc);
}

TEST(SymbolizerTest, DemanglesAMemberFunction) {
  symbolizer_test_support::Widget widget;
  const uint64_t inside = widget.AddressInside(1);
  Symbolizer symbolizer;
  const Frame frame = symbolizer.SymbolizeReturnAddress(inside);
  EXPECT_EQ(frame.function,
            "podscope::profiler::sampling::symbolizer_test_support::Widget::"
            "AddressInside(int) const");
  EXPECT_EQ(frame.address, inside);
}

TEST(SymbolizerTest, NamesTheTestBodyFromAReturnAddress) {
  const uint64_t return_address = symbolizer_test_support::ReturnAddress();
  Symbolizer symbolizer;
  const Frame frame = symbolizer.SymbolizeReturnAddress(return_address);
  EXPECT_NE(frame.function.find(
                "SymbolizerTest_NamesTheTestBodyFromAReturnAddress_Test::"
                "TestBody()"),
            std::string::npos)
      << frame.function;
}

TEST(SymbolizerTest, GarbageAddressesAreUnknown) {
  Symbolizer symbolizer;
  for (uint64_t address : {uint64_t{0}, uint64_t{1}, uint64_t{0xdead0000},
                           uint64_t{0x00007ffffffff000}, ~uint64_t{0}}) {
    const Frame frame = symbolizer.Symbolize(address);
    EXPECT_EQ(frame.function, kUnknownFunction) << std::hex << address;
    EXPECT_EQ(frame.address, address);
  }
  // Heap memory is mapped, but holds no code of any module.
  auto heap = std::make_unique<char[]>(1 << 20);
  const Frame heap_frame = symbolizer.Symbolize(Address(heap.get() + 100));
  EXPECT_EQ(heap_frame.function, kUnknownFunction);
  EXPECT_EQ(heap_frame.module, kAnonModule);
}

TEST(SymbolizerTest, VdsoIsAnonymousAndUnknown) {
  const uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso == 0) GTEST_SKIP() << "no vDSO";
  Symbolizer symbolizer;
  const Frame frame = symbolizer.Symbolize(vdso + 0x100);
  EXPECT_EQ(frame.function, kUnknownFunction);
  EXPECT_EQ(frame.module, kAnonModule);
}

TEST(SymbolizerTest, FindsALibraryLoadedAfterTheFirstLookup) {
  constexpr char kLibrary[] = "libz.so.1";
  if (dlopen(kLibrary, RTLD_NOW | RTLD_NOLOAD) != nullptr) {
    GTEST_SKIP() << kLibrary << " is already loaded";
  }
  Symbolizer symbolizer;
  // Reads the maps before the library exists.
  EXPECT_EQ(symbolizer
                .Symbolize(Address(reinterpret_cast<const void*>(
                    &symbolizer_test_static_function)))
                .function,
            "symbolizer_test_static_function(int)");
  void* handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) GTEST_SKIP() << dlerror();
  void* crc32 = dlsym(handle, "crc32");
  ASSERT_NE(crc32, nullptr);
  // Without Refresh(): the miss re-reads the maps once the rate limit allows.
  absl::SleepFor(Symbolizer::kAutoRefreshInterval);
  const Frame frame = symbolizer.Symbolize(Address(crc32));
  EXPECT_EQ(frame.function, "crc32");
  EXPECT_NE(frame.module.find("libz.so"), std::string::npos) << frame.module;
  dlclose(handle);
  ASSERT_TRUE(symbolizer.Refresh().ok());
}

// A library whose file is deleted (or replaced by an upgrade) after it was
// loaded is still named, from the file that is really mapped.
TEST(SymbolizerTest, NamesFunctionsOfALibraryDeletedAfterLoading) {
  void* system_zlib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
  if (system_zlib == nullptr) GTEST_SKIP() << dlerror();
  Dl_info info{};
  ASSERT_NE(dladdr(dlsym(system_zlib, "crc32"), &info), 0);
  const std::string copy = ::testing::TempDir() + "symbolizer_test_libz_" +
                           std::to_string(getpid()) + ".so";
  {
    std::ifstream in(info.dli_fname, std::ios::binary);
    std::ofstream out(copy, std::ios::binary | std::ios::trunc);
    out << in.rdbuf();
  }
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  void* crc32 = dlsym(handle, "crc32");
  ASSERT_NE(crc32, nullptr);
  ASSERT_EQ(unlink(copy.c_str()), 0);

  Symbolizer symbolizer;
  ASSERT_TRUE(symbolizer.Refresh().ok());
  const Frame frame = symbolizer.Symbolize(Address(crc32));
  EXPECT_EQ(frame.module, copy);
  EXPECT_EQ(frame.function, "crc32");
  dlclose(handle);
  dlclose(system_zlib);
}

TEST(SymbolizerTest, SafeToShareBetweenThreads) {
  Symbolizer symbolizer;
  const uint64_t address =
      Address(reinterpret_cast<const void*>(&symbolizer_test_static_function));
  std::thread other([&] {
    for (int i = 0; i < 200; ++i) {
      EXPECT_EQ(symbolizer.Symbolize(address).function,
                "symbolizer_test_static_function(int)");
    }
  });
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(symbolizer.Refresh().ok());
  other.join();
}

TEST(ParseProcMapsTest, ParsesEveryKindOfLine) {
  constexpr char kMaps[] =
      "55d4c8a00000-55d4c8a22000 r--p 00000000 fd:01 1234 /usr/bin/prog\n"
      "55d4c8a22000-55d4c8a80000 r-xp 00022000 fd:01 1234 /usr/bin/prog\n"
      "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
      "7f0000001000-7f0000002000 r-xp 00001000 08:02 99   "
      "/tmp/my lib.so (deleted)\n"
      "7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                  "
      "[vdso]\n";
  auto mappings = ParseProcMaps(kMaps);
  ASSERT_TRUE(mappings.ok()) << mappings.status();
  ASSERT_EQ(mappings->size(), 5u);
  const MemoryMapping& text = (*mappings)[1];
  EXPECT_EQ(text.start, 0x55d4c8a22000u);
  EXPECT_EQ(text.end, 0x55d4c8a80000u);
  EXPECT_EQ(text.file_offset, 0x22000u);
  EXPECT_EQ(text.inode, 1234u);
  EXPECT_TRUE(text.executable);
  EXPECT_EQ(text.path, "/usr/bin/prog");
  EXPECT_FALSE((*mappings)[0].executable);
  EXPECT_TRUE(text.readable);
  EXPECT_FALSE(text.writable);
  // Anonymous read-write memory (a heap, a thread's stack).
  EXPECT_TRUE((*mappings)[2].readable);
  EXPECT_TRUE((*mappings)[2].writable);
  EXPECT_FALSE((*mappings)[2].executable);
  EXPECT_EQ((*mappings)[2].path, "");
  EXPECT_EQ((*mappings)[3].path, "/tmp/my lib.so");
  EXPECT_TRUE((*mappings)[3].deleted);
  EXPECT_EQ((*mappings)[4].path, "[vdso]");
}

TEST(ParseProcMapsTest, MalformedLineIsAnErrorNamingTheLine) {
  auto mappings = ParseProcMaps(
      "55d4c8a00000-55d4c8a22000 r--p 00000000 fd:01 1234 /usr/bin/prog\n"
      "not a maps line\n");
  EXPECT_EQ(mappings.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mappings.status().message().find("line 2"), std::string::npos)
      << mappings.status();
}

TEST(DemangleTest, DemanglesCxxNamesAndLeavesOthersAlone) {
  EXPECT_EQ(Demangle("_ZN3foo3barEv"), "foo::bar()");
  EXPECT_EQ(Demangle("_ZL3bazi.constprop.0"), "baz(int) [clone .constprop.0]");
  EXPECT_EQ(Demangle("memcpy"), "memcpy");
  EXPECT_EQ(Demangle("_Znot_really_mangled"), "_Znot_really_mangled");
  EXPECT_EQ(Demangle(""), "");
}

}  // namespace
}  // namespace podscope::profiler::sampling
