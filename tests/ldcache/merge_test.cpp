// update-ldcache's in-process merge (ldcache/merge.hpp) against the sandboxed ldconfig it replaces:
// the differential test builds image roots of real ELF libraries (cc -shared), gives each its own cache
// as its image build would (the host's ldconfig over the image's configuration and system folders), adds
// the "driver" libraries and their SONAME links as a runtime and create-symlinks would, then runs both
// ways on two copies of the root and requires the same cache: the same entries in the same order (so
// every lookup resolves alike, native and 32-bit), the same `ldconfig -p` lines, the same bytes (the
// image's cache and the fallback are written by the same ldconfig here). Then each fallback, seen in
// its reason.

#include "ldcache/merge.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fixtures/builder/test_support.hpp"
#include "ldcache/cache_file.hpp"
#include "ldcache/library_search.hpp"
#include "rootfs/rootfs_test_support.hpp"
#include "rootfs/sandbox.hpp"
#include "steps/commands.hpp"
#include "steps/root_edits.hpp"
#include "support/spawn_capture.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::ldcache {
namespace {

// Runs a shell script; its output when it fails.
testing::AssertionResult sh(const std::string& script) {
  const auto run = test::run_shell("bash -euo pipefail -c '" + script + "' 2>&1");
  if (run.exit_code != 0) {
    return testing::AssertionFailure() << "script failed (" << run.exit_code << "): " << script << "\n"
                                       << run.out;
  }
  return testing::AssertionSuccess();
}

// Shell functions for the scripts: `lib DIR SONAME FILE [-m32]` builds a shared library in the root $R,
// `old` dates everything in $R to the image's build (2020), `cache` writes $R's cache as its image's own
// ldconfig would (its configuration, then its system folders $SYSTEM) and dates it after the build.
constexpr const char* k_helpers =
    "lib() { mkdir -p \"$R$1\"; echo \"int f$RANDOM(void){return 0;}\" > \"$T/x.c\"; "
    "cc ${4:-} -shared -fPIC -nostdlib -Wl,-soname,$2 -o \"$R$1/$3\" \"$T/x.c\"; }\n"
    "old() { find \"$R\" -exec touch -h -d @1600000000 {} +; }\n"
    "cache() { { echo include /etc/ld.so.conf; for d in $SYSTEM; do echo $d; done; } > \"$R/build.conf\"; "
    "ldconfig -X -i -r \"$R\" -f /build.conf; rm \"$R/build.conf\"; old; "
    "touch -d @1600000100 \"$R/etc/ld.so.cache\"; }\n";

// One image layout: the script that makes it (with its cache) and the driver's folders in it.
struct Layout {
  const char* name;
  const char* system;  // the image's system folders, as update_ld_cache finds them
  const char* image;   // builds the image in $R (helpers above), ends with `cache`
  const char* dir64;   // where the runtime mounts the 64-bit driver libraries
  const char* dir32;   // and the 32-bit ones
  // Debian's packages: a folder the image configures gets a libcuda.so.1 link to dir64's (as the host
  // has it through /etc/alternatives), relative to it; none when null.
  const char* link_dir = nullptr;
  const char* link_target = nullptr;
};

const Layout k_layouts[] = {
    // Debian 12: merged /usr, multiarch folders configured, driver into a configured folder and a new one.
    {"debian_multiarch", "/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib /usr/lib",
     "mkdir -p $R/etc/ld.so.conf.d $R/usr/lib; ln -s usr/lib $R/lib; echo 12.5 > $R/etc/debian_version; "
     "echo \"include /etc/ld.so.conf.d/*.conf\" > $R/etc/ld.so.conf; "
     "printf \"/usr/local/lib/x86_64-linux-gnu\\n/lib/x86_64-linux-gnu\\n/usr/lib/x86_64-linux-gnu\\n\" > "
     "$R/etc/ld.so.conf.d/x86_64-linux-gnu.conf; echo /usr/local/lib > $R/etc/ld.so.conf.d/libc.conf; "
     "lib /usr/lib/x86_64-linux-gnu libimg.so.1 libimg.so.1.2.3; ln -s libimg.so.1.2.3 "
     "$R/usr/lib/x86_64-linux-gnu/libimg.so.1; lib /usr/lib/x86_64-linux-gnu libz.so.1 libz.so.1; cache",
     "/usr/lib/x86_64-linux-gnu", "/usr/lib/i386-linux-gnu"},
    // Ubuntu-like: /lib and /usr/lib apart, i386 configured too; both driver folders configured.
    {"ubuntu_like", "/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib /usr/lib",
     "mkdir -p $R/etc/ld.so.conf.d $R/lib/x86_64-linux-gnu $R/usr/lib/i386-linux-gnu; "
     "echo bookworm/sid > $R/etc/debian_version; echo \"include /etc/ld.so.conf.d/*.conf\" > "
     "$R/etc/ld.so.conf; printf \"/lib/x86_64-linux-gnu\\n/usr/lib/x86_64-linux-gnu\\n\" > "
     "$R/etc/ld.so.conf.d/x86_64-linux-gnu.conf; printf \"/lib/i386-linux-gnu\\n/usr/lib/i386-linux-gnu\\n\" "
     "> "
     "$R/etc/ld.so.conf.d/i386-linux-gnu.conf; lib /lib/x86_64-linux-gnu libc.so.6 libc.so.6; "
     "lib /usr/lib/i386-linux-gnu libimg.so.1 libimg.so.1 -m32; cache",
     "/usr/lib/x86_64-linux-gnu", "/usr/lib/i386-linux-gnu"},
    // RHEL: lib64 system folders, a relative include; the driver into the system folders.
    {"rhel_lib64", "/lib /lib64 /libx32 /usr/lib /usr/lib64 /usr/libx32",
     "mkdir -p $R/etc/ld.so.conf.d $R/usr/lib64 $R/usr/lib; ln -s usr/lib64 $R/lib64; ln -s usr/lib $R/lib; "
     "echo \"include ld.so.conf.d/*.conf\" > $R/etc/ld.so.conf; lib /usr/lib64 libimg.so.1 libimg.so.1.0; "
     "ln -s libimg.so.1.0 $R/usr/lib64/libimg.so.1; cache",
     "/usr/lib64", "/usr/lib"},
    // Extra folders named in ld.so.conf itself; the driver into a folder of its own.
    {"extra_dirs", "/lib /lib64 /libx32 /usr/lib /usr/lib64 /usr/libx32",
     "mkdir -p $R/etc/ld.so.conf.d $R/usr/lib64 $R/opt/img/lib; "
     "printf \"/opt/img/lib\\ninclude /etc/ld.so.conf.d/*.conf\\n\" > $R/etc/ld.so.conf; "
     "echo /opt/other/lib > $R/etc/ld.so.conf.d/other.conf; lib /opt/img/lib libimg.so.1 libimg.so.1; "
     "lib /opt/other/lib libother.so.2 libother.so.2; cache",
     "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib"},
    // glibc-hwcaps: an image library with an x86-64-v2 build beside it.
    {"glibc_hwcaps", "/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib /usr/lib",
     "mkdir -p $R/etc/ld.so.conf.d $R/usr/lib; ln -s usr/lib $R/lib; echo 12.5 > $R/etc/debian_version; "
     "echo \"include /etc/ld.so.conf.d/*.conf\" > $R/etc/ld.so.conf; "
     "printf \"/lib/x86_64-linux-gnu\\n/usr/lib/x86_64-linux-gnu\\n\" > "
     "$R/etc/ld.so.conf.d/x86_64-linux-gnu.conf; lib /usr/lib/x86_64-linux-gnu libimg.so.1 libimg.so.1; "
     "lib /usr/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v2 libimg.so.1 libimg.so.1; cache",
     "/usr/lib/x86_64-linux-gnu", "/usr/local/nvidia/lib"},
    // Debian's driver packages: the libraries in nvidia/current (a new folder), libcuda.so.1 also in the
    // multiarch folder as a link there: two entries of one SONAME, in ldconfig's folder order.
    {"debian_packaged", "/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib /usr/lib",
     "mkdir -p $R/etc/ld.so.conf.d $R/usr/lib; ln -s usr/lib $R/lib; echo 12.5 > $R/etc/debian_version; "
     "echo \"include /etc/ld.so.conf.d/*.conf\" > $R/etc/ld.so.conf; "
     "printf \"/lib/x86_64-linux-gnu\\n/usr/lib/x86_64-linux-gnu\\n\" > "
     "$R/etc/ld.so.conf.d/x86_64-linux-gnu.conf; lib /usr/lib/x86_64-linux-gnu libimg.so.1 libimg.so.1; "
     "cache",
     "/usr/lib/x86_64-linux-gnu/nvidia/current", "/usr/lib/i386-linux-gnu/nvidia/current",
     "/usr/lib/x86_64-linux-gnu", "nvidia/current/libcuda.so.1"},
};

// The driver as a runtime and create-symlinks leave it in $R: each library file and its SONAME link (and
// libcuda.so, the development link), dated now.
std::string driver_script(const std::string& dir64, const std::string& dir32, const char* link_dir,
                          const char* link_target, bool container = true) {
  const std::string link = link_dir == nullptr ? std::string()
                                               : std::string("mkdir -p $R") + link_dir + "; ln -s " +
                                                     link_target + " $R" + link_dir + "/libcuda.so.1; ";
  // The development link create-symlinks makes whether or not the host has it (not in the host's cache).
  // And a link ldconfig ignores for its name (Debian's GBM backend in nvidia/current).
  const std::string dev_link =
      container
          ? "ln -s libnvidia-ml.so.1 $R" + dir64 + "/libnvidia-ml.so; ln -s " + "libnvidia-ml.so.1 $R" +
                dir64 + "/nvidia-drm_gbm.so; ln -s libcuda.so.535.104.05 $R" + dir64 + "/libcuda.so.535.999; "
          : "";
  return link + "lib " + dir64 + " libcuda.so.1 libcuda.so.535.104.05; ln -s libcuda.so.535.104.05 $R" +
         dir64 + "/libcuda.so.1; ln -s libcuda.so.1 $R" + dir64 + "/libcuda.so; lib " + dir64 +
         " libnvidia-ml.so.1 libnvidia-ml.so.535.104.05; ln -s libnvidia-ml.so.535.104.05 $R" + dir64 +
         "/libnvidia-ml.so.1; " + dev_link + "lib " + dir32 +
         " libcuda.so.1 libcuda.so.535.104.05 -m32; ln -s " + "libcuda.so.535.104.05 $R" + dir32 +
         "/libcuda.so.1\n";
}

class LdCacheMergeTest : public testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "the ldconfig sandbox needs root (namespaces, pivot_root)";
    }
    if (::access("/sbin/ldconfig", X_OK) != 0 || std::system("cc -m32 --version >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "no /sbin/ldconfig or no cc on this host";
    }
    auto ldconfig = rootfs::seal_host_program("/sbin/ldconfig");
    ASSERT_TRUE(ldconfig) << ldconfig.error().message;
    m_ldconfig = std::move(*ldconfig);
  }

  [[nodiscard]] std::string env(const std::string& root, const Layout& layout) const {
    return "T=" + m_temp.path() + "; R=" + root + "; SYSTEM=\"" + layout.system + "\"\n" + k_helpers;
  }

  // The host's cache for the driver (what discovery reads): the driver in a root of its own, cached by
  // the host ldconfig; its entries with their paths moved to the container's folders.
  std::vector<LdCacheFact> facts(const Layout& layout) {
    const std::string host = m_temp.path() + "/host-" + layout.name;
    EXPECT_TRUE(
        sh(env(host, layout) + "mkdir -p $R/etc; " +
           driver_script("/h64", "/h32", layout.link_dir ? "/hm" : nullptr, "../h64/libcuda.so.1", false) +
           "printf \"/hm\\n/h64\\n/h32\\n\" > $R/etc/ld.so.conf; ldconfig -X -i -r $R"));
    auto cache = read_ld_cache(host + "/etc/ld.so.cache");
    EXPECT_TRUE(cache) << cache.error().message;
    std::vector<LdCacheFact> out;
    for (const auto& entry : cache ? cache->entries : std::vector<LdCacheEntry>{}) {
      const std::string dir = entry.value.substr(0, 4);
      const char* to = dir == "/h64" ? layout.dir64 : dir == "/h32" ? layout.dir32 : layout.link_dir;
      out.push_back({entry.key, std::string(to) + entry.value.substr(3 + (dir == "/hm/" ? 0 : 1)),
                     entry.flags, entry.osversion});
      // The development link the container has and the host lacks, as discovery adds it (the SONAME it
      // leads to starts with its name): ldconfig lists it under its own name.
      if (entry.key == "libnvidia-ml.so.1") {
        out.push_back({"libnvidia-ml.so", std::string(layout.dir64) + "/libnvidia-ml.so", entry.flags,
                       entry.osversion});
      }
    }
    return out;
  }

  // The image of `layout` with the driver added, in `root`.
  void make(const std::string& root, const Layout& layout) {
    ASSERT_TRUE(sh(env(root, layout) + layout.image + "\n" +
                   driver_script(layout.dir64, layout.dir32, layout.link_dir, layout.link_target)));
  }

  [[nodiscard]] rootfs::Root open(const std::string& path) const {
    auto root = rootfs::Root::open(path);
    EXPECT_TRUE(root) << root.error().message;
    return root ? std::move(*root) : rootfs::Root{};
  }

  // update-ldcache with the merge as the hook runs it; what the merge said.
  MergeOutcome merge(const std::string& path, const Layout& layout, const std::vector<LdCacheFact>& facts) {
    MergeOutcome outcome;
    const auto root = open(path);
    const auto writer = [&](const rootfs::Root& r, const LdScan& scan,
                            rootfs::ImageBudget& budget) -> Result<bool> {
      GPUCTK_TRY_ASSIGN(outcome, merge_ld_cache(r, scan, facts, budget));
      return outcome.merged;
    };
    auto r = update_ld_cache_with(root, {layout.dir64, layout.dir32}, writer,
                                  [&]() -> Result<UniqueFd> { return UniqueFd(::dup(m_ldconfig.get())); });
    EXPECT_TRUE(r) << r.error().message;
    return outcome;
  }

  test::TempDir m_temp;
  UniqueFd m_ldconfig;
};

// The first entry of `key` for `flags` outside glibc-hwcaps, as the loader takes it ("" if none).
std::string lookup(const LdCache& cache, const std::string& key, uint32_t flags) {
  for (const auto& entry : cache.entries) {
    if (entry.key == key && entry.flags == flags && entry.hwcap == 0) {
      return entry.value;
    }
  }
  return "";
}

// The `ldconfig -p` lines of the cache in `root`, without the first (it names the file).
std::string listing(const std::string& root) {
  const auto out = fixture::test::capture("/sbin/ldconfig -p -C " + root + "/etc/ld.so.cache")
                       .value_or("ldconfig -p failed\n");
  return out.substr(out.find('\n'));
}

TEST_F(LdCacheMergeTest, DifferentialAgainstTheSandboxedLdconfig) {
  for (const auto& layout : k_layouts) {
    SCOPED_TRACE(layout.name);
    const auto driver = facts(layout);
    // libcuda.so.1 x2, libcuda.so, libnvidia-ml.so.1, libnvidia-ml.so (and the multiarch folder's
    // libcuda.so.1)
    ASSERT_EQ(driver.size(), layout.link_dir ? 6u : 5u);
    const std::string a = m_temp.path() + "/" + layout.name + "-ldconfig";
    const std::string b = m_temp.path() + "/" + layout.name + "-merge";
    make(a, layout);
    ASSERT_TRUE(sh("cp -a " + a + " " + b));
    {
      const auto root = open(a);
      auto r = update_ld_cache(root, {layout.dir64, layout.dir32}, m_ldconfig);
      ASSERT_TRUE(r) << r.error().message;
    }
    const auto outcome = merge(b, layout, driver);
    ASSERT_TRUE(outcome.merged) << outcome.reason;
    EXPECT_EQ(outcome.added, driver.size());
    const auto expected = read_file(a + "/etc/ld.so.cache");
    const auto merged = read_file(b + "/etc/ld.so.cache");
    ASSERT_TRUE(expected && merged);
    const auto want = parse_ld_cache(*expected);
    const auto got = parse_ld_cache(*merged);
    ASSERT_TRUE(want && got);
    for (const auto& entry : want->entries) {
      for (const uint32_t flags : {0x0303u, 0x0003u, 0x0001u}) {
        EXPECT_EQ(lookup(*got, entry.key, flags), lookup(*want, entry.key, flags)) << entry.key;
      }
    }
    EXPECT_EQ(got->entries, want->entries);
    EXPECT_EQ(listing(b), listing(a));
    EXPECT_NE(listing(a).find("libcuda.so.1 (libc6,x86-64) => "), std::string::npos);
    EXPECT_EQ(*merged, *expected);  // the image's cache and the fallback come from one ldconfig
    EXPECT_EQ(read_file(b + "/etc/ld.so.conf.d/00-gpuctk-driver.conf").value_or("missing"),
              read_file(a + "/etc/ld.so.conf.d/00-gpuctk-driver.conf").value_or("missing"));
  }
}

// Each case breaks the Debian image one way; the merge must leave the cache to ldconfig, saying why.
struct Fallback {
  const char* name;
  const char* script;  // run in $R after the image and the driver are made
  const char* reason;  // the start of the reason
};

const Fallback k_fallbacks[] = {
    {"no_cache", "rm $R/etc/ld.so.cache", "/etc/ld.so.cache: "},
    {"cache_is_a_link", "ln -sf /etc/passwd $R/etc/ld.so.cache", "/etc/ld.so.cache is not a regular file"},
    {"cache_is_a_fifo", "rm $R/etc/ld.so.cache; mkfifo $R/etc/ld.so.cache",
     "/etc/ld.so.cache is not a regular file"},
    {"cache_is_huge", "truncate -s 70M $R/etc/ld.so.cache", "/etc/ld.so.cache is larger than 67108864 bytes"},
    {"cache_truncated", "truncate -s 100 $R/etc/ld.so.cache; touch -d @1600000100 $R/etc/ld.so.cache",
     "ld.so.cache: "},
    {"old_format",
     "printf \"ld.so-1.7.0\\0\\0\\0\\0\\0\" > $R/etc/ld.so.cache; touch -d @1600000100 $R/etc/ld.so.cache",
     "/etc/ld.so.cache is not in the new format alone"},
    {"stale_conf", "touch $R/etc/ld.so.conf.d/libc.conf",
     "/etc/ld.so.cache is older than /etc/ld.so.conf.d/"},
    {"stale_library", "lib /usr/lib/x86_64-linux-gnu libnew.so.1 libnew.so.1",
     "/lib/x86_64-linux-gnu/\"libnew.so.1\" is new since /etc/ld.so.cache"},
    {"deleted_library", "rm $R/usr/lib/x86_64-linux-gnu/libz.so.1",
     "/etc/ld.so.cache lists /lib/x86_64-linux-gnu/\"libz.so.1\", which is gone"},
    {"cuda_compat", "echo /usr/local/cuda/compat > $R/etc/ld.so.conf.d/00-gpuctk-compat.conf",
     "/etc/ld.so.conf.d/00-gpuctk-compat.conf exists"},
    {"clash",
     "lib /usr/local/lib libcuda.so.1 libcuda.so.1; touch -d @1600000000 $R/usr/local/lib "
     "$R/usr/local/lib/libcuda.so.1; cache",
     "\"libcuda.so.1\" is both "},
    {"foreign_include",
     "echo \"include /opt/*.conf\" >> $R/etc/ld.so.conf; touch -d @1600000000 $R/etc/ld.so.conf",
     "/etc/ld.so.conf includes \"/opt/*.conf\""},
    {"hwcap_index_out_of_range",
     "python3 -c \"import sys,struct; p=sys.argv[1]; b=bytearray(open(p,\\\"rb\\\").read()); "
     "struct.pack_into(\\\"<Q\\\", b, 48+16, (1<<62)|99); open(p,\\\"wb\\\").write(b)\" $R/etc/ld.so.cache; "
     "touch -d @1600000100 $R/etc/ld.so.cache",
     ""},
};

TEST_F(LdCacheMergeTest, WhatCannotBeProvenIsLeftToLdconfig) {
  const Layout& debian = k_layouts[0];
  const auto driver = facts(debian);
  for (const auto& fallback : k_fallbacks) {
    SCOPED_TRACE(fallback.name);
    const std::string root = m_temp.path() + "/" + fallback.name;
    make(root, debian);
    ASSERT_TRUE(sh(env(root, debian) + fallback.script));
    const auto outcome = merge(root, debian, driver);
    EXPECT_FALSE(outcome.merged);
    EXPECT_TRUE(outcome.reason.starts_with(fallback.reason)) << outcome.reason;
    // ldconfig ran instead: a cache that lists the driver, as a regular file.
    struct stat st {};
    ASSERT_EQ(::lstat((root + "/etc/ld.so.cache").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    const auto cache = read_ld_cache(root + "/etc/ld.so.cache");
    ASSERT_TRUE(cache) << cache.error().message;
    EXPECT_NE(lookup(*cache, "libcuda.so.1", 0x0303), "");
  }
  // No facts (an older spec): ldconfig.
  const std::string root = m_temp.path() + "/no_facts";
  make(root, debian);
  const auto outcome = merge(root, debian, {});
  EXPECT_FALSE(outcome.merged);
  EXPECT_EQ(outcome.reason, "no --ld-cache-entry (the spec does not carry the driver's cache entries)");
}

// The hook as the spec runs it: config ld-cache picks the way, the debug log says which.
TEST_F(LdCacheMergeTest, TheHookMergesUnlessTheConfigSaysLdconfig) {
  const Layout& debian = k_layouts[0];
  steps::HookArgs args;
  for (const char* dir : {debian.dir64, debian.dir32}) {
    args.add("--folder", dir);
  }
  for (const auto& fact : facts(debian)) {
    char value[64];
    std::snprintf(value, sizeof value, "0x%x:0x%x:", fact.flags, fact.osversion);
    args.add("--ld-cache-entry", value + fact.soname + ":" + fact.path);
  }
  for (const auto mode : {config::LdCacheMode::merge, config::LdCacheMode::ldconfig}) {
    const bool merge = mode == config::LdCacheMode::merge;
    const std::string root_path = m_temp.path() + (merge ? "/hook-merge" : "/hook-ldconfig");
    make(root_path, debian);
    config::Config config;
    config.ld_cache = mode;
    auto log = config::Log::open(root_path + ".log", config::LogLevel::debug);
    ASSERT_TRUE(log) << log.error().message;
    auto body = steps::prepare_hook(*steps::find_hook("update-ldcache"), args, config, *log);
    ASSERT_TRUE(body) << body.error().message;
    const auto root = open(root_path);
    auto done = (*body)(root, config, *log);
    ASSERT_TRUE(done) << done.error().message;
    const std::string text = read_file(root_path + ".log").value_or("");
    EXPECT_NE(
        text.find(merge ? "debug: update-ldcache: merge: 5 entries added to the image's linker cache in " +
                              root_path + "\n"
                        : std::string("debug: update-ldcache: ldconfig (config ld-cache: ldconfig)\n")),
        std::string::npos)
        << text;
    const auto cache = read_ld_cache(root_path + "/etc/ld.so.cache");
    ASSERT_TRUE(cache) << cache.error().message;
    EXPECT_EQ(lookup(*cache, "libcuda.so.1", 0x0303), "/lib/x86_64-linux-gnu/libcuda.so.1");
  }
}

// Issue 33 item 6: an image built with umask 077 has a 0600 drop-in naming its folder, and keeps Ubuntu's
// /usr/local/lib 0700 (both root's). The cache update-ldcache writes lists their libraries as root's
// ldconfig does on a copy of the same image: with config ld-cache: ldconfig, and by the default merge,
// which leaves the cache to ldconfig here (the libraries are newer than the image's cache). Before, the
// sandboxed ldconfig ran as nobody and silently skipped both.
TEST_F(LdCacheMergeTest, FilesOnlyRootCanReadAreCachedAsRootsLdconfigCachesThem) {
  const Layout& ubuntu = k_layouts[1];
  steps::HookArgs args;
  for (const char* dir : {ubuntu.dir64, ubuntu.dir32}) {
    args.add("--folder", dir);
  }
  for (const auto& fact : facts(ubuntu)) {
    char value[64];
    std::snprintf(value, sizeof value, "0x%x:0x%x:", fact.flags, fact.osversion);
    args.add("--ld-cache-entry", value + fact.soname + ":" + fact.path);
  }
  const std::string umask_077 =
      "echo /opt/app/lib > $R/etc/ld.so.conf.d/x.conf; chmod 0600 $R/etc/ld.so.conf.d/x.conf; "
      "lib /opt/app/lib libapp.so.1 libapp.so.1; chmod 0700 $R/opt/app/lib; "
      "echo /usr/local/lib > $R/etc/ld.so.conf.d/libc.conf; lib /usr/local/lib libpeerdup.so.1 "
      "libpeerdup.so.1; chmod 0700 $R/usr/local/lib";
  for (const auto mode : {config::LdCacheMode::ldconfig, config::LdCacheMode::merge}) {
    const std::string root_path =
        m_temp.path() + (mode == config::LdCacheMode::merge ? "/private-merge" : "/private-ldconfig");
    make(root_path, ubuntu);
    ASSERT_TRUE(sh(env(root_path, ubuntu) + umask_077));
    config::Config config;
    config.ld_cache = mode;
    auto log = config::Log::open(root_path + ".log", config::LogLevel::debug);
    ASSERT_TRUE(log) << log.error().message;
    auto body = steps::prepare_hook(*steps::find_hook("update-ldcache"), args, config, *log);
    ASSERT_TRUE(body) << body.error().message;
    {
      const auto root = open(root_path);
      auto done = (*body)(root, config, *log);
      ASSERT_TRUE(done) << done.error().message;
    }
    const std::string text = read_file(root_path + ".log").value_or("");
    EXPECT_NE(text.find("debug: update-ldcache: ldconfig"), std::string::npos) << text;
    // Root's ldconfig on a copy of the image as update-ldcache left it (its drop-in, if any, included).
    const std::string copy = root_path + "-root";
    ASSERT_TRUE(sh("cp -a " + root_path + " " + copy + "; /sbin/ldconfig -X -i -r " + copy));
    const std::string want = listing(copy);
    EXPECT_NE(want.find("libpeerdup.so.1 (libc6,x86-64) => /usr/local/lib/libpeerdup.so.1"),
              std::string::npos)
        << want;
    EXPECT_NE(want.find("libapp.so.1 (libc6,x86-64) => /opt/app/lib/libapp.so.1"), std::string::npos) << want;
    EXPECT_EQ(listing(root_path), want);
  }
}

// Issue 33 item 6, where idmapping is refused (here not asked for): ldconfig reads the umask-077 image as
// nobody and loses its private libraries from the cache, as before the idmapped mount. That is no longer
// silent: the note is a warning (nobody_skipping) naming the 0600 drop-in and the 0700 folders. An image
// whose files others can read gets the plain nobody note, which the hook logs at debug level only.
TEST_F(LdCacheMergeTest, ReadAsNobodyTheNoteNamesWhatLdconfigSkips) {
  const Layout& ubuntu = k_layouts[1];
  const std::string umask_077 =
      "echo /opt/app/lib > $R/etc/ld.so.conf.d/x.conf; chmod 0600 $R/etc/ld.so.conf.d/x.conf; "
      "lib /opt/app/lib libapp.so.1 libapp.so.1; chmod 0700 $R/opt/app/lib; "
      "echo /usr/local/lib > $R/etc/ld.so.conf.d/libc.conf; lib /usr/local/lib libpeerdup.so.1 "
      "libpeerdup.so.1; chmod 0700 $R/usr/local/lib";
  for (const bool private_files : {true, false}) {
    SCOPED_TRACE(private_files ? "umask 077" : "umask 022");
    const std::string path = m_temp.path() + (private_files ? "/nobody-077" : "/nobody-022");
    make(path, ubuntu);
    ASSERT_TRUE(sh(env(path, ubuntu) + (private_files ? umask_077 : "")));
    std::vector<std::pair<rootfs::SandboxView, std::string>> notes;
    rootfs::SandboxLimits limits;
    limits.idmap = false;
    limits.note = [&](rootfs::SandboxView view, const std::string& m) { notes.emplace_back(view, m); };
    {
      const auto root = open(path);
      auto r = update_ld_cache(root, {ubuntu.dir64, ubuntu.dir32}, m_ldconfig, limits);
      ASSERT_TRUE(r) << r.error().message;
    }
    ASSERT_EQ(notes.size(), 1U);
    const std::string as_nobody = "sandbox: reads " + path +
                                  " as nobody (idmapping not asked for); a file or folder only its owner "
                                  "can read is skipped";
    if (private_files) {
      EXPECT_EQ(notes[0].first, rootfs::SandboxView::nobody_skipping);
      EXPECT_EQ(notes[0].second,
                as_nobody + ": \"/etc/ld.so.conf.d/x.conf\", \"/usr/local/lib\", \"/opt/app/lib\"");
      EXPECT_EQ(listing(path).find("libapp.so.1"), std::string::npos) << listing(path);
      EXPECT_EQ(listing(path).find("libpeerdup.so.1"), std::string::npos) << listing(path);
    } else {
      EXPECT_EQ(notes[0].first, rootfs::SandboxView::nobody);
      EXPECT_EQ(notes[0].second, as_nobody);
    }
  }
}

}  // namespace
}  // namespace gpuctk::ldcache
