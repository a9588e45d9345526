// native_library_facts against glibc's ldconfig: for libraries gcc builds here, the SONAME and flags we
// read are the key and flags ldconfig's cache lists them under; what ldconfig would list differently
// (no SONAME: its file name; a GNU ABI tag: an osversion) or not at all gives no facts.
#include "discover/elf_library.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fixtures/builder/test_support.hpp"
#include "ldcache/cache_file.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::discover {
namespace {

namespace fs = std::filesystem;
using fixture::test::capture;
using fixture::test::shell_quote;

class ElfLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fixture::test::is_executable("/usr/bin/gcc") || !fixture::test::is_executable("/sbin/ldconfig")) {
      GTEST_SKIP() << "needs /usr/bin/gcc and /sbin/ldconfig";
    }
    if (::geteuid() != 0) {
      GTEST_SKIP() << "ldconfig -r chroots, which needs root";
    }
    m_root = fs::path(m_tmp.path()) / "root";
    fs::create_directories(m_root / "etc");
    fs::create_directories(m_root / "lib");
    std::ofstream(m_root / "etc/ld.so.conf") << "";
  }

  // gcc's shared library `name` in the root's /lib from C source `source`, with `flags`.
  std::string library(const std::string& name, const std::string& source, const std::string& flags) {
    const fs::path c = fs::path(m_tmp.path()) / (name + ".c");
    std::ofstream(c) << source;
    const std::string out = (m_root / "lib" / name).string();
    const auto command = "/usr/bin/gcc -shared -fPIC " + flags + " -o " + shell_quote(out) + " " +
                         shell_quote(c.string()) + " 2>&1";
    EXPECT_TRUE(capture(command).has_value()) << "failed: " << command;
    return out;
  }

  // The entry ldconfig's cache of the root has for the file `name` of /lib (by its SONAME, or its name).
  std::optional<ldcache::LdCacheEntry> ldconfig_entry(const std::string& key) {
    const auto command = "/sbin/ldconfig -X -i -r " + shell_quote(m_root.string()) +
                         " -f /etc/ld.so.conf -C /etc/ld.so.cache 2>&1";
    EXPECT_TRUE(capture(command).has_value()) << "failed: " << command;
    auto cache = ldcache::read_ld_cache((m_root / "etc/ld.so.cache").string());
    EXPECT_TRUE(cache) << cache.error().message;
    if (cache) {
      for (const auto& entry : cache->entries) {
        if (entry.key == key) {
          return entry;
        }
      }
    }
    return std::nullopt;
  }

  test::TempDir m_tmp;
  fs::path m_root;
};

TEST_F(ElfLibraryTest, AreWhatLdconfigListsTheLibraryUnder) {
  const auto with_libc = library("libwithc.so.2.0", "int f(void) { return 1; }", "-Wl,-soname,libwithc.so.2");
  const auto without_libc =
      library("libnolibc.so.1.0", "int g(void) { return 2; }", "-nostdlib -Wl,-soname,libnolibc.so.1");
  for (const auto& [path, soname] :
       {std::pair{with_libc, "libwithc.so.2"}, {without_libc, "libnolibc.so.1"}}) {
    const auto facts = native_library_facts(path);
    ASSERT_TRUE(facts) << path;
    const auto entry = ldconfig_entry(soname);
    ASSERT_TRUE(entry) << soname;
    EXPECT_EQ(facts->soname, entry->key);
    EXPECT_EQ(facts->flags, entry->flags) << soname;
    EXPECT_EQ(entry->osversion, 0u);
    EXPECT_EQ(entry->flags, static_cast<uint32_t>(*ldcache::native_arch()) |
                                static_cast<uint32_t>(ldcache::LibType::elf_libc6));
  }
}

// ldconfig lists a library without a SONAME under its file name: facts without a SONAME. A GNU ABI tag note
// is said (an older ldconfig made it the entry's osversion; glibc 2.36's writes 0, as it does here).
TEST_F(ElfLibraryTest, WithoutASonameAndWithAnAbiTag) {
  const auto unnamed = library("libunnamed.so.3", "int h(void) { return 3; }", "");
  const uint32_t flags =
      static_cast<uint32_t>(*ldcache::native_arch()) | static_cast<uint32_t>(ldcache::LibType::elf_libc6);
  EXPECT_EQ(native_library_facts(unnamed), (ElfLibraryFacts{"", flags, false}));
  const auto listed = ldconfig_entry("libunnamed.so.3");
  ASSERT_TRUE(listed) << "ldconfig lists it under its file name";
  EXPECT_EQ(listed->flags, flags);
  const std::string code = "int t(void) { return 4; }\n";
  const std::string note =
      "__asm__(\".pushsection .note.ABI-tag,\\\"a\\\",@note\\n.p2align 2\\n.long 4\\n.long 16\\n.long "
      "1\\n.asciz \\\"GNU\\\"\\n.long 0\\n.long 3\\n.long 2\\n.long 0\\n.popsection\\n\");\n";
  const auto tagged = library("libtagged.so.4.0", note + code, "-Wl,-soname,libtagged.so.4");
  EXPECT_EQ(native_library_facts(tagged), (ElfLibraryFacts{"libtagged.so.4", flags, true}));
  const auto entry = ldconfig_entry("libtagged.so.4");
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->flags, flags);
  EXPECT_EQ(entry->osversion, 0u) << "glibc 2.36's ldconfig writes no osversion";
  const auto plain = library("libplain.so.4.0", code, "-Wl,-soname,libplain.so.4");
  EXPECT_EQ(native_library_facts(plain),
            (ElfLibraryFacts{"libplain.so.4", static_cast<uint32_t>(*ldcache::native_arch()) |
                                                  static_cast<uint32_t>(ldcache::LibType::elf_libc6)}));
  const auto notes = capture("readelf -n " + shell_quote(tagged) + " 2>&1");
  ASSERT_TRUE(notes);
  EXPECT_NE(notes->find("NT_GNU_ABI_TAG"), std::string::npos) << *notes;
}

TEST_F(ElfLibraryTest, NoneForAnythingElse) {
  const auto good = library("libgood.so.5.0", "int k(void) { return 5; }", "-Wl,-soname,libgood.so.5");
  ASSERT_TRUE(native_library_facts(good));
  // A link (never followed), a text file, a truncated copy, a directory, nothing.
  fs::create_symlink(good, m_root / "lib/libgood.so.5");
  EXPECT_EQ(native_library_facts((m_root / "lib/libgood.so.5").string()), std::nullopt);
  std::ofstream(m_root / "lib/libtext.so.1") << "INPUT(-lgood)\n";
  EXPECT_EQ(native_library_facts((m_root / "lib/libtext.so.1").string()), std::nullopt);
  auto bytes = read_file(good);
  ASSERT_TRUE(bytes);
  for (const size_t keep : {size_t{16}, size_t{64}, size_t{600}}) {
    std::ofstream(m_root / "lib/libcut.so.1", std::ios::binary | std::ios::trunc) << bytes->substr(0, keep);
    EXPECT_EQ(native_library_facts((m_root / "lib/libcut.so.1").string()), std::nullopt) << keep;
  }
  EXPECT_EQ(native_library_facts((m_root / "lib").string()), std::nullopt);
  EXPECT_EQ(native_library_facts((m_root / "lib/missing.so.1").string()), std::nullopt);
  // A 32-bit library (not this build's class) gives none: the merge adds native entries only.
  const auto lib32 =
      library("lib32.so.6.0", "int m(void) { return 6; }", "-m32 -nostdlib -Wl,-soname,lib32.so.6");
  ASSERT_TRUE(fs::exists(lib32));
  EXPECT_EQ(native_library_facts(lib32), std::nullopt);
}

}  // namespace
}  // namespace gpuctk::discover
