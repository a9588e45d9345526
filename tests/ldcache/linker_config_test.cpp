#include "ldcache/linker_config.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "rootfs/rootfs_test_support.hpp"
#include "rootfs/sandbox.hpp"

namespace gpuctk::ldcache {
namespace {

using rootfs::directory_id;
using rootfs::FileId;
using rootfs::FileKind;
using rootfs::ImageBudget;
using rootfs::ImageWork;
using rootfs::k_sandbox_deadline;
using rootfs::open_image_path;
using rootfs::read_image_file;
using rootfs::Resolver;
using rootfs::Root;

using test::make_host_dirs;
using test::make_host_link;
using test::write_host_file;

using Dirs = std::vector<std::string>;

// --- parse_ld_so_conf ---------------------------------------------------------------------------------

TEST(ParseLdSoConf, ReadsLinesAsGlibcsLdconfigDoes) {
  const auto lines = parse_ld_so_conf(
      "# a comment\n"
      "/usr/local/lib\n"
      "  \t/opt/a/lib/ # trailing comment\n"
      "/opt/b/lib//\n"
      "/opt/c/lib=libc6\n"
      "/opt/d lib \r\n"
      "include /etc/ld.so.conf.d/*.conf\n"
      "include\t/x/*.conf  \t other/*.conf\n"
      "include\n"
      "includes/dir\n"
      "hwcap 1 nosegneg\n"
      "HWCAP\t0 x\n"
      "hwcaps/dir\n"
      "/\n"
      "relative/lib\n"
      "\n"
      "   \n"
      "/last");
  const auto dir = [](const char* value) { return LdSoConfEntry{LdSoConfKind::directory, value}; };
  const auto include = [](const char* value) { return LdSoConfEntry{LdSoConfKind::include, value}; };
  EXPECT_EQ(lines, (std::vector<LdSoConfEntry>{dir("/usr/local/lib"), dir("/opt/a/lib"), dir("/opt/b/lib"),
                                               dir("/opt/c/lib"), dir("/opt/d lib"),
                                               include("/etc/ld.so.conf.d/*.conf"), include("/x/*.conf"),
                                               include("other/*.conf"), dir("include"), dir("includes/dir"),
                                               dir("hwcaps/dir"), dir("relative/lib"), dir("/last")}));
}

TEST(ParseLdSoConf, NothingInAnEmptyOrCommentOnlyText) {
  for (const char* text : {"", "\n\n", "# only\n#\n", "include \n"}) {
    EXPECT_TRUE(parse_ld_so_conf(text).empty()) << text;
  }
}

// --- parse_musl_path ----------------------------------------------------------------------------------

TEST(ParseMuslPath, ColonsAndNewlinesSeparateAndANulEndsTheText) {
  EXPECT_EQ(parse_musl_path("/lib:/usr/local/lib:/usr/lib"),
            (std::vector<std::string_view>{"/lib", "/usr/local/lib", "/usr/lib"}));
  EXPECT_EQ(parse_musl_path("/a\n\n/b::/c d\n"), (std::vector<std::string_view>{"/a", "/b", "/c d"}));
  EXPECT_EQ(parse_musl_path(std::string_view("/a\n/b\0/c\n", 9)),
            (std::vector<std::string_view>{"/a", "/b"}));
  EXPECT_TRUE(parse_musl_path("").empty());
  EXPECT_TRUE(parse_musl_path(":\n:").empty());
}

// --- configured_library_dirs and open_image_path, on real roots --------------------------------------

class LinkerConfigTest : public testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_temp.path().empty());
    m_root_path = m_temp.path() + "/rootfs";
    make_host_dirs(m_root_path + "/etc");
  }

  [[nodiscard]] Root open_root() const {
    auto root = Root::open(m_root_path, GetParam());
    EXPECT_TRUE(root) << root.error().message;
    return root ? std::move(*root) : Root{};
  }

  [[nodiscard]] std::string at(const std::string& container_path) const {
    return m_root_path + container_path;
  }

  [[nodiscard]] Result<Dirs> dirs(std::span<const FileId> skip = {}) const {
    ImageBudget budget(k_sandbox_deadline);
    return configured_library_dirs(open_root(), "/etc/ld.so.conf", skip, budget);
  }

  [[nodiscard]] std::string error_of(const Result<Dirs>& r) const {
    if (r) {
      return "no error";
    }
    std::string text = r.error().message;
    for (size_t pos = text.find(m_root_path); pos != std::string::npos; pos = text.find(m_root_path)) {
      text.replace(pos, m_root_path.size(), "<root>");
    }
    return text;
  }

  test::TempDir m_temp;
  std::string m_root_path;
};

INSTANTIATE_TEST_SUITE_P(Resolvers, LinkerConfigTest, testing::Values(Resolver::automatic, Resolver::walk),
                         test::resolver_name);

TEST_P(LinkerConfigTest, ExpandsIncludesWhereTheyStandInSortedOrder) {
  write_host_file(at("/etc/ld.so.conf"),
                  "/first\ninclude /etc/ld.so.conf.d/*.conf\n/after\ninclude local.d/*\n");
  write_host_file(at("/etc/ld.so.conf.d/b.conf"), "/b\n");
  write_host_file(at("/etc/ld.so.conf.d/a.conf"), "/a1\n/a2\n");
  write_host_file(at("/etc/ld.so.conf.d/B.conf"), "/B\n");             // 'B' < 'a' bytewise
  write_host_file(at("/etc/ld.so.conf.d/.hidden.conf"), "/hidden\n");  // '*' skips a leading '.'
  write_host_file(at("/etc/ld.so.conf.d/c.conf.disabled"), "/disabled\n");
  make_host_dirs(at("/etc/ld.so.conf.d/d.conf"));              // a directory: nothing
  make_host_link("/nowhere", at("/etc/ld.so.conf.d/e.conf"));  // dangling: nothing
  write_host_file(at("/etc/local.d/x"), "relative/x\n");       // relative to /etc
  auto r = dirs();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (Dirs{"/first", "/B", "/a1", "/a2", "/b", "/after", "/relative/x"}));
}

TEST_P(LinkerConfigTest, NestedIncludesAndGlobsInDirectoryComponents) {
  write_host_file(at("/etc/ld.so.conf"), "include /opt/*/ld?conf\n");
  write_host_file(at("/opt/one/ld.conf"), "/one\ninclude sub/[ab].conf\n");
  write_host_file(at("/opt/one/sub/a.conf"), "/one-a\n");
  write_host_file(at("/opt/one/sub/c.conf"), "/one-c\n");
  write_host_file(at("/opt/two/ld-conf"), "/two\n");
  write_host_file(at("/opt/three/other"), "/three\n");
  auto r = dirs();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (Dirs{"/one", "/one-a", "/two"}));
}

// glibc's ldconfig has no loop check: it recurses until it runs out of file descriptors, or for ever when
// a file of the loop includes twice. A loop is refused.
TEST_P(LinkerConfigTest, AnIncludeLoopIsAnError) {
  write_host_file(at("/etc/ld.so.conf"), "include /etc/ld.so.conf\n");
  EXPECT_EQ(
      error_of(dirs()),
      "the image's linker configuration: \"/etc/ld.so.conf\" is included while it is read (an include loop)");
  write_host_file(at("/etc/ld.so.conf"), "include /etc/a.conf\n/top\n");
  write_host_file(at("/etc/a.conf"), "/a\ninclude b.conf\n");
  write_host_file(at("/etc/b.conf"), "/b\ninclude /etc/*.conf\n");
  EXPECT_EQ(
      error_of(dirs()),
      "the image's linker configuration: \"/etc/a.conf\" is included while it is read (an include loop)");
  make_host_link("a.conf", at("/etc/b.conf"));  // a.conf includes itself through a link
  EXPECT_EQ(
      error_of(dirs()),
      "the image's linker configuration: \"/etc/b.conf\" is included while it is read (an include loop)");
}

// A file included more than once (no loop) is read once; ldconfig opens it each time, which counts
// against the bound: included twice at each of 8 levels, it would be opened 511 times.
TEST_P(LinkerConfigTest, AFileIncludedAgainIsReadOnceButCountedAsOftenAsLdconfigOpensIt) {
  write_host_file(at("/etc/ld.so.conf"), "include /etc/f1.conf\n/top\ninclude /etc/f1.conf\n");
  for (int level = 1; level < 7; ++level) {
    const std::string next = "/etc/f" + std::to_string(level + 1) + ".conf";
    write_host_file(at("/etc/f" + std::to_string(level) + ".conf"),
                    "include " + next + "\ninclude " + next + "\n");
  }
  write_host_file(at("/etc/f7.conf"), "/deep\n");
  auto r = dirs();  // 1 + 2 * 127 opens
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (Dirs{"/deep", "/top"}));  // each directory once, where ldconfig meets it first
  write_host_file(at("/etc/f7.conf"), "include /etc/f8.conf /etc/f8.conf\n");
  write_host_file(at("/etc/f8.conf"), "/deep\n");
  EXPECT_EQ(error_of(dirs()), "the image's linker configuration: more than 256 files (at \"/etc/f1.conf\")");
}

TEST_P(LinkerConfigTest, SkipsTheFilesItIsToldToLeaveOut) {
  write_host_file(at("/etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n");
  write_host_file(at("/etc/ld.so.conf.d/00-ours.conf"), "/ours\n");
  write_host_file(at("/etc/ld.so.conf.d/image.conf"), "/image\n");
  struct stat st {};
  ASSERT_EQ(::stat(at("/etc/ld.so.conf.d/00-ours.conf").c_str(), &st), 0);
  const FileId ours{st.st_dev, st.st_ino};
  auto r = dirs(std::span(&ours, 1));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (Dirs{"/image"}));
}

TEST_P(LinkerConfigTest, NoConfigurationNamesNothing) {
  auto r = dirs();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->empty());
  make_host_dirs(at("/etc/ld.so.conf"));
  r = dirs();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->empty());
}

// Absolute includes and links, even to host paths, are the image's paths: resolved inside the root.
TEST_P(LinkerConfigTest, AbsoluteIncludesAndLinksOutStayInTheRoot) {
  const std::string host_dir = m_temp.path() + "/host";
  write_host_file(host_dir + "/host.conf", "/host-dir\n");
  write_host_file(at("/etc/ld.so.conf"),
                  "include " + host_dir + "/*.conf\ninclude /etc/ld.so.conf.d/*.conf\n");
  write_host_file(at(host_dir + "/in-root.conf"), "/in-root\n");
  make_host_link(host_dir + "/host.conf", at("/etc/ld.so.conf.d/link.conf"));
  make_host_link("../../../../../../../../.." + host_dir + "/host.conf", at("/etc/ld.so.conf.d/up.conf"));
  make_host_link("/proc/self/root" + host_dir + "/host.conf", at("/etc/ld.so.conf.d/proc.conf"));
  auto r = dirs();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (Dirs{"/in-root"}));
}

TEST_P(LinkerConfigTest, DotDotIsTheParentOfWhereALinkLeads) {
  write_host_file(at("/etc/ld.so.conf"),
                  "include /etc/conf-link/../real.conf\ninclude /../../etc/./x/../top.conf\n");
  make_host_link("/opt/deep/conf", at("/etc/conf-link"));
  make_host_dirs(at("/opt/deep/conf"));
  write_host_file(at("/opt/deep/real.conf"), "/deep\n");
  write_host_file(at("/etc/real.conf"), "/lexical-would-read-this\n");
  make_host_dirs(at("/etc/x"));
  write_host_file(at("/etc/top.conf"), "/top\n");
  auto r = dirs();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, (Dirs{"/deep", "/top"}));
  const Root root = open_root();
  ImageBudget budget(k_sandbox_deadline);
  auto fd = open_image_path(root, "etc/conf-link/../../..", O_PATH | O_DIRECTORY, budget);
  ASSERT_TRUE(fd) << fd.error().message;
  EXPECT_EQ(directory_id(root, "/", budget), directory_id(root, "/etc/../../etc/..", budget));
  EXPECT_EQ(directory_id(root, "/missing/..", budget), std::nullopt);
  EXPECT_EQ(directory_id(root, "/opt/deep", budget), directory_id(root, "/etc/conf-link/..", budget));
}

// A path is one resolution, as the kernel makes it: 40 links in all, whatever ".." comes between them.
TEST_P(LinkerConfigTest, APathIsOneResolutionOfAtMostFortyLinks) {
  make_host_dirs(at("/d"));
  make_host_dirs(at("/x"));
  std::string next = "d";
  for (int i = 39; i >= 1; --i) {
    make_host_link("x/../" + next, at("/l" + std::to_string(i)));
    next = "l" + std::to_string(i);
  }
  make_host_link("x/../" + next, at("/s"));  // /s: 40 links to /d
  const Root root = open_root();
  ImageBudget budget(k_sandbox_deadline);
  EXPECT_EQ(directory_id(root, "/s", budget), directory_id(root, "/d", budget));
  EXPECT_EQ(directory_id(root, "/s/..", budget), directory_id(root, "/", budget));
  EXPECT_EQ(directory_id(root, "s/../d/", budget), directory_id(root, "/d", budget));
  auto fd = open_image_path(root, "/s/../s", O_PATH, budget);  // 80 links
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().message,
            "/s/../s in container root " + m_root_path + ": Too many levels of symbolic links");
  EXPECT_EQ(budget.spent(ImageWork::resolutions), 7U);
  EXPECT_TRUE(budget.check());
}

// A spent budget (here: its deadline) ends the read with its one line, never "nothing there".
TEST_P(LinkerConfigTest, ASpentBudgetEndsTheReadWithOneLine) {
  write_host_file(at("/etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n");
  write_host_file(at("/etc/ld.so.conf.d/a.conf"), "/a\n");
  ImageBudget past(std::chrono::milliseconds(0));
  EXPECT_EQ(error_of(configured_library_dirs(open_root(), "/etc/ld.so.conf", {}, past)),
            "the image's linker configuration: reading the image in-process: past its deadline of 0 s");
  auto file = read_image_file(open_root(), "/etc/ld.so.conf", 100, past);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().message, "reading the image in-process: past its deadline of 0 s");
}

TEST_P(LinkerConfigTest, AFileTooLargeIsAnError) {
  write_host_file(at("/etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n");
  write_host_file(at("/etc/ld.so.conf.d/huge.conf"), std::string(k_max_conf_size + 1, '#'));
  EXPECT_EQ(error_of(dirs()),
            "the image's linker configuration: read /etc/ld.so.conf.d/huge.conf in container root "
            "<root>: larger than 65536 bytes");
  write_host_file(at("/etc/ld.so.conf.d/huge.conf"), std::string(k_max_conf_size, '#'));
  EXPECT_EQ(error_of(dirs()), "no error");
}

TEST_P(LinkerConfigTest, AFifoOrADeviceIsAnErrorAndNeverBlocks) {
  write_host_file(at("/etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n");
  make_host_dirs(at("/etc/ld.so.conf.d"));
  ASSERT_EQ(::mkfifo(at("/etc/ld.so.conf.d/fifo.conf").c_str(), 0644), 0);
  EXPECT_EQ(error_of(dirs()),
            "the image's linker configuration: /etc/ld.so.conf.d/fifo.conf in container root <root>: not a "
            "regular file");
  ::unlink(at("/etc/ld.so.conf.d/fifo.conf").c_str());
  make_host_link("/dev/zero", at("/etc/ld.so.conf.d/zero.conf"));
  make_host_dirs(at("/dev"));
  if (::mknod(at("/dev/zero").c_str(), S_IFCHR | 0666, makedev(1, 5)) != 0) {
    GTEST_SKIP() << "cannot make a device node here (not root)";
  }
  EXPECT_EQ(error_of(dirs()),
            "the image's linker configuration: /etc/ld.so.conf.d/zero.conf in container root <root>: not a "
            "regular file");
}

TEST_P(LinkerConfigTest, ThousandsOfIncludedFilesAreAnError) {
  write_host_file(at("/etc/ld.so.conf"), "include /etc/ld.so.conf.d/*.conf\n");
  for (size_t i = 0; i < k_max_conf_files; ++i) {
    write_host_file(at("/etc/ld.so.conf.d/" + std::to_string(10000 + i) + ".conf"),
                    "/lib" + std::to_string(i) + "\n");
  }
  EXPECT_EQ(error_of(dirs()),
            "the image's linker configuration: more than 256 files (at \"/etc/ld.so.conf.d/10255.conf\")");
  ::unlink(at("/etc/ld.so.conf.d/10000.conf").c_str());
  auto r = dirs();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), k_max_conf_files - 1);
}

TEST_P(LinkerConfigTest, ADirectoryOfManyEntriesIsAnError) {
  write_host_file(at("/etc/ld.so.conf"), "include /big/*.conf\n");
  make_host_dirs(at("/big"));
  for (size_t i = 0; i < k_max_glob_entries; ++i) {
    const std::string path = at("/big/" + std::to_string(i));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
  }
  EXPECT_EQ(error_of(dirs()),
            "the image's linker configuration: include patterns scan more than 65536 directory entries "
            "(\"/big/*.conf\")");
}

TEST_P(LinkerConfigTest, TooManyDirectoryLinesAreAnError) {
  std::string text;
  for (size_t i = 0; i <= k_max_conf_dirs; ++i) {
    text += "/l" + std::to_string(i) + "\n";
  }
  write_host_file(at("/etc/ld.so.conf"), text);
  EXPECT_EQ(error_of(dirs()),
            "the image's linker configuration: more than 4096 directories (at \"/etc/ld.so.conf\")");
}

}  // namespace
}  // namespace gpuctk::ldcache
