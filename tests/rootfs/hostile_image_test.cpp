// The hostile-image suite (ctest label `hostile-image`, gtest filter HostileImage*): container roots
// built the way an attacker builds an image, given to the library functions (both resolvers) and to
// the real `gpuctk hook ...` binaries (OCI state on stdin, a clean environment, as a runtime runs
// them). For every case:
//   - a sentinel host directory outside the root (built to look like a root: etc/, usr/lib/...,
//     files, a link) and everything outside the root in the test's directory (the bundle, the root's
//     parent listing) are digested before and after, recursively (names, types, modes, contents,
//     link texts), and must be unchanged; host paths an escape would create are checked too;
//   - the hook either succeeds with every change inside the root, or fails with exactly one line,
//     "gpuctk: error: ...", and exit status 1.
// Each case names the CVE class it covers.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ldcache/cache_file.hpp"
#include "ldcache/library_search.hpp"
#include "ldcache/merge.hpp"
#include "rootfs/rootfs_test_support.hpp"
#include "rootfs/sandbox.hpp"
#include "rootfs/sandbox_probe.hpp"
#include "steps/root_edits.hpp"

namespace gpuctk::rootfs {
namespace {

using test::HookRun;
using test::host_kind;
using test::host_listing;
using test::host_readlink;
using test::make_host_dirs;
using test::make_host_link;
using test::tree_digest;
using test::write_host_file;

constexpr const char* k_triplet_dir = "/usr/lib/x86_64-linux-gnu";

// The paths (relative, as tree_digest names them) whose lines differ between two digests.
std::string changed_paths(const std::string& before, const std::string& after) {
  const auto lines = [](const std::string& digest) {
    std::set<std::string> out;
    size_t start = 0;
    while (start < digest.size()) {
      size_t end = digest.find('\n', start);
      // A file's content may hold newlines: a digest line starts with "./" or is ".".
      while (end != std::string::npos && end + 1 < digest.size() && digest.compare(end + 1, 2, "./") != 0) {
        end = digest.find('\n', end + 1);
      }
      if (end == std::string::npos) {
        end = digest.size();
      }
      out.insert(digest.substr(start, end - start));
      start = end + 1;
    }
    return out;
  };
  const auto a = lines(before);
  const auto b = lines(after);
  std::set<std::string> names;
  for (const auto* set : {&a, &b}) {
    const auto* other = set == &a ? &b : &a;
    for (const auto& line : *set) {
      if (!other->contains(line)) {
        names.insert(line.substr(0, line.find(' ')));
      }
    }
  }
  std::string out;
  for (const auto& name : names) {
    out += (out.empty() ? "" : " ") + name;
  }
  return out.empty() ? "nothing" : out;
}

// The outcome of a CLI hook run as one line: "ok" or the error line; anything else (more lines,
// another exit status, output on stdout) is spelled out so that the comparison fails.
std::string hook_outcome(const HookRun& run) {
  if (run.exit_code == 0 && run.err.empty() && run.out.empty()) {
    return "ok";
  }
  const std::string prefix = "gpuctk: error: ";
  if (run.exit_code == 1 && run.out.empty() && run.err.starts_with(prefix) && run.err.ends_with("\n") &&
      run.err.find('\n') == run.err.size() - 1) {
    return run.err.substr(0, run.err.size() - 1);
  }
  return "exit " + std::to_string(run.exit_code) + " stdout " + quote(run.out) + " stderr " + quote(run.err);
}

// `text` with the random part of the sandbox's scratch directory in /etc (".ldconfig.gpuctk-<12 hex>")
// replaced by X.
std::string without_scratch_names(const std::string& text) {
  return std::regex_replace(text, std::regex("\\.ldconfig\\.gpuctk-[0-9a-f]{12}"), ".ldconfig.gpuctk-X");
}

// /proc/1/root is refused as a magic link (ELOOP) or, where pid 1 may not be inspected, with EACCES:
// both are refusals, and which one depends on the machine's pid 1.
std::string refusals_alike(std::string text) {
  for (const std::string from : {": Too many levels of symbolic links", ": Permission denied"}) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
      text.replace(at, from.size(), ": <refused>");
    }
  }
  return text;
}

template <class T>
std::string lib_outcome(const Result<T>& r) {
  return r ? "ok" : "error: " + r.error().message;
}

// One hostile image: <temp>/bundle/config.json, <temp>/bundle/rootfs, a sentinel host directory
// <temp>/sentinel that looks like a root, and scratch space for hook I/O in another temp directory.
class HostileImageFixture {
 public:
  HostileImageFixture() {
    m_base = m_temp.path();
    m_bundle = m_base + "/bundle";
    m_root = m_bundle + "/rootfs";
    m_sentinel = m_base + "/sentinel";
    write_host_file(m_sentinel + "/etc/passwd", "sentinel passwd\n", 0644);
    write_host_file(m_sentinel + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n", 0644);
    make_host_dirs(m_sentinel + "/etc/ld.so.conf.d");
    write_host_file(m_sentinel + "/usr/lib/x86_64-linux-gnu/libsentinel.so.1", "not a library", 0755);
    make_host_dirs(m_sentinel + "/dev/dri");
    write_host_file(m_sentinel + "/dev/dri/card0", "sentinel card", 0600);
    write_host_file(m_sentinel + "/params", "ModifyDeviceFiles: 1\n", 0444);
    make_host_link("etc/passwd", m_sentinel + "/passwd-link");
    // A real library: an ldconfig that followed a link here would make its SONAME link beside it.
    for (const char* libz : {"/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib64/libz.so.1"}) {
      if (auto bytes = read_file(libz)) {
        write_host_file(m_sentinel + "/usr/lib/x86_64-linux-gnu/libz.so.1.sentinel", *bytes, 0644);
        break;
      }
    }
    m_config = m_scratch.path() + "/config.yaml";
    set_config("log-level: info\n");
    write_config_json("[]");
    reset_root();
  }

  // A fresh root: /etc, /usr/lib/x86_64-linux-gnu, /sbin, /dev.
  void reset_root() {
    std::error_code ec;
    std::filesystem::remove_all(m_root, ec);
    make_host_dirs(m_root + "/etc");
    make_host_dirs(m_root + k_triplet_dir);
    make_host_dirs(m_root + "/sbin");
    make_host_dirs(m_root + "/dev");
  }

  void set_config(std::string_view yaml) { write_host_file(m_config, yaml, 0644); }

  void write_config_json(const std::string& env_json) {
    write_host_file(m_bundle + "/config.json",
                    R"({"ociVersion":"1.0.2","process":{"args":["sh"],"cwd":"/","env":)" + env_json +
                        R"(},"root":{"path":"rootfs"}})",
                    0644);
  }

  // What must not change: everything in the test directory except the root's content (the root's
  // own entry, and so the bundle's listing, is included), and host paths an escape would touch.
  [[nodiscard]] std::string outside() const {
    std::string out = tree_digest(m_base, {m_root});
    out += "host /etc/ld.so.conf.d: ";
    for (const auto& name : host_listing("/etc/ld.so.conf.d")) {
      out += name + " ";
    }
    out += "\nhost /etc/ld.so.cache: " +
           std::to_string(std::hash<std::string>{}(read_file("/etc/ld.so.cache").value_or("")));
    out += "\nhost /etc/ld.so.conf: " + read_file("/etc/ld.so.conf").value_or("<none>");
    for (const char* p :
         {"/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/dev/dri/by-path",
          "/00-gpuctk-driver.conf", "/ld.so.conf", "/ld.so.cache", "/gpuctk-hostile-marker"}) {
      out += std::string("\nhost ") + p + ": " + host_kind(p);
    }
    return out;
  }

  [[nodiscard]] std::string root_digest() const { return tree_digest(m_root); }

  // `limit_s`: see test::run_hook.
  [[nodiscard]] HookRun hook(const std::vector<std::string>& args,
                             const std::vector<std::string>& env = test::clean_hook_env(),
                             int limit_s = 0) const {
    std::vector<std::string> full{args.front(), "--config", m_config};
    full.insert(full.end(), args.begin() + 1, args.end());
    return test::run_hook(full, m_bundle, m_scratch.path(), env, limit_s);
  }

  // `text` with the temporary paths replaced by <root>, <sentinel> and <base>.
  [[nodiscard]] std::string normalise(std::string text) const {
    for (const auto& [from, to] :
         {std::pair{m_root, std::string("<root>")}, std::pair{m_sentinel, std::string("<sentinel>")},
          std::pair{m_base, std::string("<base>")}}) {
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
      }
    }
    return text;
  }

  [[nodiscard]] Result<Root> open(Resolver resolver) const { return Root::open(m_root, resolver); }

  test::TempDir m_temp;
  test::TempDir m_scratch;
  std::string m_base;
  std::string m_bundle;
  std::string m_root;
  std::string m_sentinel;
  std::string m_config;
};

// The link targets an image uses to point a directory out of the root.
struct Escape {
  const char* name;
  std::string target;
};
std::vector<Escape> escapes(const std::string& sentinel) {
  return {
      {"slash", "/"},
      {"dotdot", "../../../../../../../.."},
      {"sentinel", sentinel},
      {"proc-self-root", "/proc/self/root"},
      {"proc-1-root", "/proc/1/root"},
  };
}

class HostileImageTest : public testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) {
      GTEST_SKIP() << "the hooks run as root; the suite builds roots with root-owned files and mounts";
    }
    ASSERT_FALSE(m_image.m_base.empty());
  }

  [[nodiscard]] Root root() const {
    auto r = m_image.open(GetParam());
    EXPECT_TRUE(r) << r.error().message;
    return r ? std::move(*r) : Root{};
  }

  [[nodiscard]] bool automatic() const { return GetParam() == Resolver::automatic; }

  HostileImageFixture m_image;
};

INSTANTIATE_TEST_SUITE_P(HostileImage, HostileImageTest, testing::Values(Resolver::automatic, Resolver::walk),
                         test::resolver_name);

// CVE-2024-0134 (create-symlinks link escape) and CVE-2024-0132/0133 (host files created through image
// symlinks): the directory a link goes in, or its parent, is a symlink out of the root.
TEST_P(HostileImageTest, CreateSymlinksWhoseDirectoryIsASymlinkOut) {
  std::string report;
  for (const char* dir : {k_triplet_dir, "/dev/dri", "/usr/lib"}) {
    for (const auto& escape : escapes(m_image.m_sentinel)) {
      for (const bool cli : {false, true}) {
        m_image.reset_root();
        make_host_link(escape.target, m_image.m_root + dir);
        const std::string link = std::string(k_triplet_dir) + "/libcuda.so.1";
        const std::string dri_link = "/dev/dri/by-path/pci-0000:3b:00.0-card";
        const std::string before_outside = m_image.outside();
        const std::string before_root = m_image.root_digest();
        std::string outcome;
        if (cli) {
          outcome = hook_outcome(m_image.hook({"create-symlinks", "--link", "libcuda.so.550.54.15::" + link,
                                               "--link", "../card0::" + dri_link}));
        } else {
          auto links = steps::parse_links({"libcuda.so.550.54.15::" + link, "../card0::" + dri_link});
          ASSERT_TRUE(links) << links.error().message;
          outcome = lib_outcome(steps::create_symlinks(root(), *links));
        }
        EXPECT_EQ(m_image.outside(), before_outside) << dir << " -> " << escape.target;
        report += std::string(dir) + " -> " + escape.name + (cli ? " (cli)" : "") + ": " + outcome +
                  "; changed: " + changed_paths(before_root, m_image.root_digest()) + "\n";
      }
    }
  }
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(/usr/lib/x86_64-linux-gnu -> slash: ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./libcuda.so.1
/usr/lib/x86_64-linux-gnu -> slash (cli): ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./libcuda.so.1
/usr/lib/x86_64-linux-gnu -> dotdot: ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./libcuda.so.1
/usr/lib/x86_64-linux-gnu -> dotdot (cli): ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./libcuda.so.1
/usr/lib/x86_64-linux-gnu -> sentinel: error: /usr/lib/x86_64-linux-gnu in container root <root>: Not a directory; changed: nothing
/usr/lib/x86_64-linux-gnu -> sentinel (cli): gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Not a directory; changed: nothing
/usr/lib/x86_64-linux-gnu -> proc-self-root: error: /usr/lib/x86_64-linux-gnu in container root <root>: Not a directory; changed: nothing
/usr/lib/x86_64-linux-gnu -> proc-self-root (cli): gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Not a directory; changed: nothing
/usr/lib/x86_64-linux-gnu -> proc-1-root: error: /usr/lib/x86_64-linux-gnu in container root <root>: Not a directory; changed: nothing
/usr/lib/x86_64-linux-gnu -> proc-1-root (cli): gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Not a directory; changed: nothing
/dev/dri -> slash: ok; changed: ./by-path ./by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> slash (cli): ok; changed: ./by-path ./by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> dotdot: ok; changed: ./by-path ./by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> dotdot (cli): ok; changed: ./by-path ./by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> sentinel: error: /dev/dri in container root <root>: Not a directory; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> sentinel (cli): gpuctk: error: create-symlinks: /dev/dri in container root <root>: Not a directory; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> proc-self-root: error: /dev/dri in container root <root>: Not a directory; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> proc-self-root (cli): gpuctk: error: create-symlinks: /dev/dri in container root <root>: Not a directory; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> proc-1-root: error: /dev/dri in container root <root>: Not a directory; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/dev/dri -> proc-1-root (cli): gpuctk: error: create-symlinks: /dev/dri in container root <root>: Not a directory; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> slash: ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> slash (cli): ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> dotdot: ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> dotdot (cli): ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> sentinel: ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> sentinel (cli): ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> proc-self-root: ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> proc-self-root (cli): ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> proc-1-root: ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/usr/lib -> proc-1-root (cli): ok; changed: ./dev/dri ./dev/dri/by-path ./dev/dri/by-path/pci-0000:3b:00.0-card ./usr/lib/x86_64-linux-gnu/libcuda.so.1
)x");
}

}  // namespace
}  // namespace gpuctk::rootfs

namespace gpuctk::rootfs {
namespace {

// CVE-2024-0134 (create-symlinks): something the image already has where a link must go. A file or a
// link (even one to a host file) is replaced, never written through; a directory is an error.
TEST_P(HostileImageTest, CreateSymlinksOverWhatTheImageHas) {
  std::string report;
  const std::string link = std::string(k_triplet_dir) + "/libcuda.so.1";
  for (const char* what : {"file", "dir", "link-to-sentinel-file", "link-to-sentinel-dir", "dangling-link"}) {
    for (const bool cli : {false, true}) {
      m_image.reset_root();
      const std::string at = m_image.m_root + link;
      const std::string kind = what;
      if (kind == "file") {
        write_host_file(at, "image file");
      } else if (kind == "dir") {
        write_host_file(at + "/inside", "x");
      } else if (kind == "link-to-sentinel-file") {
        make_host_link(m_image.m_sentinel + "/etc/passwd", at);
      } else if (kind == "link-to-sentinel-dir") {
        make_host_link(m_image.m_sentinel + "/usr/lib/x86_64-linux-gnu", at);
      } else {
        make_host_link("/nonexistent", at);
      }
      const std::string before_outside = m_image.outside();
      const std::string before_root = m_image.root_digest();
      std::string outcome;
      if (cli) {
        outcome = hook_outcome(m_image.hook({"create-symlinks", "--link", "libcuda.so.550.54.15::" + link}));
      } else {
        outcome = lib_outcome(steps::create_symlinks(root(), {{"libcuda.so.550.54.15", link}}));
      }
      EXPECT_EQ(m_image.outside(), before_outside) << what;
      report += kind + (cli ? " (cli)" : "") + ": " + outcome +
                "; changed: " + changed_paths(before_root, m_image.root_digest()) +
                "; now: " + host_kind(at) + " " + (host_kind(at) == "link" ? host_readlink(at) : "") + "\n";
    }
  }
  EXPECT_EQ(m_image.normalise(report),
            R"x(file: ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1; now: link libcuda.so.550.54.15
file (cli): ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1; now: link libcuda.so.550.54.15
dir: error: create link /usr/lib/x86_64-linux-gnu/libcuda.so.1 in container root <root>: Is a directory; changed: nothing; now: dir 
dir (cli): gpuctk: error: create-symlinks: create link /usr/lib/x86_64-linux-gnu/libcuda.so.1 in container root <root>: Is a directory; changed: nothing; now: dir 
link-to-sentinel-file: ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1; now: link libcuda.so.550.54.15
link-to-sentinel-file (cli): ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1; now: link libcuda.so.550.54.15
link-to-sentinel-dir: ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1; now: link libcuda.so.550.54.15
link-to-sentinel-dir (cli): ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1; now: link libcuda.so.550.54.15
dangling-link: ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1; now: link libcuda.so.550.54.15
dangling-link (cli): ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1; now: link libcuda.so.550.54.15
)x");
}

// CVE-2024-0134: ".." in a link name from a hostile spec is refused before anything is touched.
TEST_P(HostileImageTest, DotDotInLinkNamesIsRefused) {
  const std::string before_outside = m_image.outside();
  const std::string before_root = m_image.root_digest();
  auto links = steps::parse_links({"x::/usr/../../etc/passwd"});
  ASSERT_FALSE(links);
  EXPECT_EQ(
      links.error().message,
      "--link \"x::/usr/../../etc/passwd\": \"/usr/../../etc/passwd\": \".\" and \"..\" are not allowed in a "
      "container path");
  auto direct = create_symlink(root(), "x", "/usr/../../etc/passwd");
  ASSERT_FALSE(direct);
  EXPECT_EQ(direct.error().message,
            "\"/usr/../../etc/passwd\": \".\" and \"..\" are not allowed in a container path");
  const HookRun run = m_image.hook({"create-symlinks", "--link", "x::/usr/../../etc/passwd"});
  EXPECT_EQ(
      hook_outcome(run),
      "gpuctk: error: create-symlinks: --link \"x::/usr/../../etc/passwd\": \"/usr/../../etc/passwd\": \".\" "
      "and \"..\" are not allowed in a container path");
  const HookRun relative = m_image.hook({"create-symlinks", "--link", "x::etc/passwd"});
  EXPECT_EQ(hook_outcome(relative),
            "gpuctk: error: create-symlinks: --link \"x::etc/passwd\": \"etc/passwd\": not an absolute path");
  EXPECT_EQ(m_image.outside(), before_outside);
  EXPECT_EQ(m_image.root_digest(), before_root);
}

// CVE-2025-23267 (update-ldcache following image links) and CVE-2024-0132/0133: /etc, /etc/ld.so.conf.d,
// the library directory, /etc/ld.so.conf or /etc/ld.so.cache is a symlink out of the root.
TEST_P(HostileImageTest, UpdateLdcacheWhosePathsAreSymlinksOut) {
  SKIP_WITHOUT_LDCONFIG();
  std::string report;
  for (const char* path :
       {"/etc", "/etc/ld.so.conf.d", k_triplet_dir, "/etc/ld.so.conf", "/etc/ld.so.cache"}) {
    for (const auto& escape : escapes(m_image.m_sentinel)) {
      for (const bool cli : {false, true}) {
        m_image.reset_root();
        std::string target = escape.target;
        if (escape.name == std::string("sentinel") && std::string(path) != k_triplet_dir &&
            std::string(path) != "/etc") {
          target += path;  // the sentinel's own file or directory of that name
        } else if (escape.name == std::string("sentinel") && std::string(path) == k_triplet_dir) {
          target += k_triplet_dir;
        } else if (escape.name == std::string("sentinel")) {
          target += "/etc";
        }
        make_host_link(target, m_image.m_root + path);
        const std::string before_outside = m_image.outside();
        const std::string before_root = m_image.root_digest();
        std::string outcome;
        if (cli) {
          outcome = hook_outcome(m_image.hook({"update-ldcache", "--folder", k_triplet_dir}));
        } else {
          auto ldconfig = seal_host_program("/sbin/ldconfig");
          ASSERT_TRUE(ldconfig) << ldconfig.error().message;
          outcome = lib_outcome(ldcache::update_ld_cache(root(), {k_triplet_dir}, *ldconfig));
        }
        EXPECT_EQ(m_image.outside(), before_outside) << path << " -> " << target;
        report += std::string(path) + " -> " + escape.name + (cli ? " (cli)" : "") + ": " + outcome +
                  "; changed: " + changed_paths(before_root, m_image.root_digest()) + "\n";
      }
    }
  }
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(/etc -> slash: ok; changed: ./ld.so.cache ./ld.so.conf ./ld.so.conf.d ./ld.so.conf.d/00-gpuctk-driver.conf
/etc -> slash (cli): ok; changed: ./ld.so.cache ./ld.so.conf ./ld.so.conf.d ./ld.so.conf.d/00-gpuctk-driver.conf
/etc -> dotdot: ok; changed: ./ld.so.cache ./ld.so.conf ./ld.so.conf.d ./ld.so.conf.d/00-gpuctk-driver.conf
/etc -> dotdot (cli): ok; changed: ./ld.so.cache ./ld.so.conf ./ld.so.conf.d ./ld.so.conf.d/00-gpuctk-driver.conf
/etc -> sentinel: error: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: nothing
/etc -> sentinel (cli): gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: nothing
/etc -> proc-self-root: error: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: nothing
/etc -> proc-self-root (cli): gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: nothing
/etc -> proc-1-root: error: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: nothing
/etc -> proc-1-root (cli): gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: nothing
/etc/ld.so.conf.d -> slash: ok; changed: ./00-gpuctk-driver.conf ./etc/ld.so.cache ./etc/ld.so.conf
/etc/ld.so.conf.d -> slash (cli): ok; changed: ./00-gpuctk-driver.conf ./etc/ld.so.cache ./etc/ld.so.conf
/etc/ld.so.conf.d -> dotdot: ok; changed: ./00-gpuctk-driver.conf ./etc/ld.so.cache ./etc/ld.so.conf
/etc/ld.so.conf.d -> dotdot (cli): ok; changed: ./00-gpuctk-driver.conf ./etc/ld.so.cache ./etc/ld.so.conf
/etc/ld.so.conf.d -> sentinel: error: /etc/ld.so.conf.d in container root <root>: Not a directory; changed: nothing
/etc/ld.so.conf.d -> sentinel (cli): gpuctk: error: update-ldcache: /etc/ld.so.conf.d in container root <root>: Not a directory; changed: nothing
/etc/ld.so.conf.d -> proc-self-root: error: /etc/ld.so.conf.d in container root <root>: Not a directory; changed: nothing
/etc/ld.so.conf.d -> proc-self-root (cli): gpuctk: error: update-ldcache: /etc/ld.so.conf.d in container root <root>: Not a directory; changed: nothing
/etc/ld.so.conf.d -> proc-1-root: error: /etc/ld.so.conf.d in container root <root>: Not a directory; changed: nothing
/etc/ld.so.conf.d -> proc-1-root (cli): gpuctk: error: update-ldcache: /etc/ld.so.conf.d in container root <root>: Not a directory; changed: nothing
/usr/lib/x86_64-linux-gnu -> slash: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> slash (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> dotdot: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> dotdot (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> sentinel: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> sentinel (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> proc-self-root: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> proc-self-root (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> proc-1-root: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> proc-1-root (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> slash: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> slash (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> dotdot: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> dotdot (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> sentinel: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> sentinel (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> proc-self-root: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> proc-self-root (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> proc-1-root: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.conf -> proc-1-root (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> slash: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> slash (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> dotdot: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> dotdot (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> sentinel: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> sentinel (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> proc-self-root: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> proc-self-root (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> proc-1-root: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc/ld.so.cache -> proc-1-root (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
)x");
}

}  // namespace
}  // namespace gpuctk::rootfs

namespace gpuctk::rootfs {
namespace {

// update-ldcache's in-process merge (ldcache/merge.hpp) reads the image's /etc/ld.so.cache: links
// out of the root, a FIFO, a huge, truncated or malformed file, entries whose paths lead out of the root.
// The hook never reads or changes anything outside the root, never hangs, and either merges (the
// image's own entries are kept as they are: only the image's loader reads them) or leaves the cache to
// ldconfig, with its reason in the log; nothing fails.
TEST_P(HostileImageTest, MergeOfAHostileCacheNeverLeavesTheRoot) {
  SKIP_WITHOUT_LDCONFIG();
  const auto libz = read_file("/lib/x86_64-linux-gnu/libz.so.1");
  if (!libz) {
    GTEST_SKIP() << "no /lib/x86_64-linux-gnu/libz.so.1 on this host to use as the driver's library";
  }
  const std::string log = m_image.m_scratch.path() + "/merge.log";
  m_image.set_config("log-level: debug\nlog-file: " + log + "\n");
  // A valid cache of `entries` (the writer H20 made), dated after everything else.
  const auto cache_of = [](std::vector<ldcache::LdCacheEntry> entries) {
    ldcache::LdCache cache;
    for (auto& entry : entries) {
      ldcache::insert_ld_cache_entry(cache, std::move(entry));
    }
    return ldcache::serialize_ld_cache(cache).value_or("");
  };
  const auto entry = [](std::string key, std::string value) {
    return ldcache::LdCacheEntry{.key = std::move(key), .value = std::move(value), .flags = 0x303};
  };
  std::string hwcap = cache_of({entry("libimg.so.1", "/usr/lib/libimg.so.1")});
  hwcap[48 + 16 + 7] = 0x40;  // entry 0's hwcap: a glibc-hwcaps index (0) the file has no name for
  hwcap[48 + 16] = 7;
  struct Case {
    std::string name;
    std::function<void(const std::string& path)> make;
  };
  const std::vector<Case> cases = {
      {"link to the sentinel",
       [&](const std::string& p) { make_host_link(m_image.m_sentinel + "/etc/passwd", p); }},
      {"link to /proc/self/root",
       [](const std::string& p) { make_host_link("/proc/self/root/etc/ld.so.cache", p); }},
      {"link dotdot",
       [](const std::string& p) { make_host_link("../../../../../../../../etc/ld.so.cache", p); }},
      {"fifo", [](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0); }},
      {"huge",
       [](const std::string& p) {
         write_host_file(p, "glibc-ld.so.cache1.1");
         ASSERT_EQ(::truncate(p.c_str(), 70 << 20), 0);
       }},
      {"truncated",
       [&](const std::string& p) {
         write_host_file(p, cache_of({entry("libimg.so.1", "/usr/lib/libimg.so.1")}).substr(0, 60));
       }},
      {"hwcap index out of range", [&](const std::string& p) { write_host_file(p, hwcap); }},
      {"entries pointing outside",
       [&](const std::string& p) {
         write_host_file(p,
                         cache_of({entry("libsentinel.so.1",
                                         m_image.m_sentinel + "/usr/lib/x86_64-linux-gnu/libsentinel.so.1"),
                                   entry("libpasswd.so.1", "/proc/self/root/etc/passwd"),
                                   entry("libdotdot.so.1", "/../../../../etc/passwd")}));
       }},
  };
  std::string report;
  for (const auto& c : cases) {
    m_image.reset_root();
    write_host_file(m_image.m_root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
    write_host_file(m_image.m_root + k_triplet_dir + "/libz.so.1", *libz, 0755);
    ASSERT_EQ(std::system(("find " + m_image.m_root + " -exec touch -h -d @1600000000 {} +").c_str()), 0);
    c.make(m_image.m_root + "/etc/ld.so.cache");
    const std::string before_outside = m_image.outside();
    std::filesystem::remove(log);
    const auto outcome =
        hook_outcome(m_image.hook({"update-ldcache", "--folder", k_triplet_dir, "--ld-cache-entry",
                                   std::string("0x303:0x0:libz.so.1:") + k_triplet_dir + "/libz.so.1"}));
    EXPECT_EQ(m_image.outside(), before_outside) << c.name;
    const std::string text = read_file(log).value_or("");
    const auto at = text.find("update-ldcache: ");
    const std::string said =
        at == std::string::npos ? "no log line" : text.substr(at, text.find('\n', at) - at);
    const auto cache = ldcache::read_ld_cache(m_image.m_root + "/etc/ld.so.cache");
    report +=
        c.name + ": " + outcome + "; " + said + "; cache lists libz.so.1: " +
        (cache && std::ranges::any_of(cache->entries, [](const auto& e) { return e.key == "libz.so.1"; })
             ? "yes"
             : "no") +
        "\n";
  }
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(link to the sentinel: ok; update-ldcache: ldconfig: /etc/ld.so.cache is not a regular file; cache lists libz.so.1: yes
link to /proc/self/root: ok; update-ldcache: ldconfig: /etc/ld.so.cache is not a regular file; cache lists libz.so.1: yes
link dotdot: ok; update-ldcache: ldconfig: /etc/ld.so.cache is not a regular file; cache lists libz.so.1: yes
fifo: ok; update-ldcache: ldconfig: /etc/ld.so.cache is not a regular file; cache lists libz.so.1: yes
huge: ok; update-ldcache: ldconfig: /etc/ld.so.cache is larger than 67108864 bytes; cache lists libz.so.1: yes
truncated: ok; update-ldcache: ldconfig: ld.so.cache: 1 entries of 24 bytes at offset 48 do not fit the file (size 60); cache lists libz.so.1: yes
hwcap index out of range: ok; update-ldcache: ldconfig: ld.so.cache: entry 0: glibc-hwcaps index 7 outside the 0 glibc-hwcaps subdirectories; cache lists libz.so.1: yes
entries pointing outside: ok; update-ldcache: merge: 1 entries added to the image's linker cache in <root>; cache lists libz.so.1: yes
)x");
}

// CVE-2024-0132/0133 (TOCTOU, host files created through a root the hook cannot write): a read-only
// root. Run in a child in a private mount namespace; the hooks fail with one line and leave nothing.
TEST_P(HostileImageTest, AReadOnlyRootFailsWithOneLineAndLeavesNothing) {
  if (!test::can_unshare_mounts()) {
    GTEST_SKIP() << "cannot make a private mount namespace here";
  }
  SKIP_WITHOUT_LDCONFIG();
  const std::string before_outside = m_image.outside();
  const std::string before_root = m_image.root_digest();
  const Resolver resolver = GetParam();
  const HostileImageFixture& image = m_image;
  const std::string report = test::in_private_mount_ns([&]() -> std::string {
    const char* path = image.m_root.c_str();
    if (::mount(path, path, nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, path, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) != 0) {
      return "cannot make the root read-only";
    }
    auto root = image.open(resolver);
    if (!root) {
      return root.error().message;
    }
    std::string out;
    out += "create_symlinks: " +
           lib_outcome(steps::create_symlinks(
               *root, {{"libcuda.so.1", std::string(k_triplet_dir) + "/libcuda.so"}})) +
           "\n";
    auto ldconfig = seal_host_program("/sbin/ldconfig");
    if (!ldconfig) {
      return ldconfig.error().message;
    }
    out +=
        "update_ld_cache: " + lib_outcome(ldcache::update_ld_cache(*root, {k_triplet_dir}, *ldconfig)) + "\n";
    out += "cli create-symlinks: " +
           hook_outcome(image.hook(
               {"create-symlinks", "--link", "libcuda.so.1::/usr/lib/x86_64-linux-gnu/libcuda.so"})) +
           "\n";
    out += "cli update-ldcache: " + hook_outcome(image.hook({"update-ldcache", "--folder", k_triplet_dir})) +
           "\n";
    out += "cli chmod: " + hook_outcome(image.hook({"chmod", "--mode", "700", "--path", "/etc"})) + "\n";
    return out;
  });
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(create_symlinks: error: create link /usr/lib/x86_64-linux-gnu/libcuda.so in container root <root>: Read-only file system
update_ld_cache: error: write /etc/ld.so.conf in container root <root>: Read-only file system
cli create-symlinks: gpuctk: error: create-symlinks: create link /usr/lib/x86_64-linux-gnu/libcuda.so in container root <root>: Read-only file system
cli update-ldcache: gpuctk: error: update-ldcache: write /etc/ld.so.conf in container root <root>: Read-only file system
cli chmod: gpuctk: error: chmod: chmod /etc in container root <root>: Read-only file system
)x");
  EXPECT_EQ(m_image.outside(), before_outside);
  EXPECT_EQ(m_image.root_digest(), before_root);
}

// CVE-2024-0136/0137 (the container's ldconfig), and NVIDIA's reading of `--ldconfig-path` (issue 20
// item 9: "the path to ldconfig on the host"; nvidia-ctk writes `--ldconfig-path /sbin/ldconfig` into
// its specs). The image ships /sbin/ldconfig (and .real) as a script, then as a static program, each of
// which would write a marker on the host and in the root. "@/sbin/ldconfig" (the default) and
// "/sbin/ldconfig" are both the host's ldconfig, with allow-ldconfig-from-container true as well (no
// longer used: a warning in the log): each run makes the cache (which the image's program, writing
// none, would not) and no marker appears anywhere.
TEST_P(HostileImageTest, TheImagesLdconfigNeverRuns) {
  SKIP_WITHOUT_LDCONFIG();
  const std::string marker = m_image.m_base + "/ldconfig-marker";
  const std::string script = "#!/bin/sh\necho pwned > " + marker + "\necho pwned > /gpuctk-hostile-marker\n";
  // Control: the script does write the marker when something runs it.
  write_host_file(m_image.m_base + "/control.sh", script, 0755);
  ASSERT_EQ(std::system(("sh " + m_image.m_base + "/control.sh").c_str()), 0);
  ASSERT_EQ(host_kind(marker), "file");
  ASSERT_EQ(::unlink(marker.c_str()), 0);
  ASSERT_EQ(::unlink("/gpuctk-hostile-marker"), 0);
  ASSERT_EQ(::unlink((m_image.m_base + "/control.sh").c_str()), 0);
  // A static program doing the same, when this host can build one.
  const std::string source = m_image.m_scratch.write(
      "evil.c",
      "#include <stdio.h>\nint main(void) {\n"
      "  FILE* f = fopen(\"" +
          marker +
          "\", \"w\"); if (f) fputs(\"pwned\", f);\n"
          "  FILE* g = fopen(\"/gpuctk-hostile-marker\", \"w\"); if (g) fputs(\"pwned\", g);\n"
          "  return 0;\n}\n");
  const std::string program = m_image.m_scratch.path() + "/evil";
  if (std::system(("cc -static -o " + program + " " + source + " >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "cannot build a static program here (cc -static)";
  }

  const std::string log = m_image.m_scratch.path() + "/hook.log";
  const std::string before_outside = m_image.outside();
  std::string report;
  for (const char* kind : {"script", "static"}) {
    const std::string image_program =
        kind == std::string("script") ? script : read_file(program).value_or("");
    for (const char* config : {"default", "allowed"}) {
      m_image.set_config(config == std::string("default")
                             ? std::string("log-level: info\n")
                             : "allow-ldconfig-from-container: true\nlog-file: " + log + "\n");
      for (const char* path : {"", "@/sbin/ldconfig", "/sbin/ldconfig"}) {
        m_image.reset_root();
        write_host_file(m_image.m_root + "/sbin/ldconfig", image_program, 0755);
        write_host_file(m_image.m_root + "/sbin/ldconfig.real", image_program, 0755);
        std::vector<std::string> args{"update-ldcache", "--folder", k_triplet_dir};
        if (*path != '\0') {
          args.insert(args.end(), {"--ldconfig-path", path});
        }
        // The hook first: the operands of + are evaluated in no set order.
        const std::string outcome = hook_outcome(m_image.hook(args));
        report += std::string(kind) + " " + config + " " + (*path != '\0' ? path : "(none)") + ": " +
                  outcome + ", cache " + host_kind(m_image.m_root + "/etc/ld.so.cache") +
                  ", marker in root " + host_kind(m_image.m_root + "/gpuctk-hostile-marker") + "\n";
      }
    }
  }
  // The library call reads a plain path as the host's too.
  auto plain = steps::open_host_ldconfig("/sbin/ldconfig");
  report += "lib plain: " + lib_outcome(plain) + "\n";
  EXPECT_EQ(host_kind(marker), "missing");
  EXPECT_EQ(host_kind("/gpuctk-hostile-marker"), "missing");
  EXPECT_EQ(m_image.outside(), before_outside);
  std::string expected;
  for (const char* kind : {"script", "static"}) {
    for (const char* config : {"default", "allowed"}) {
      for (const char* path : {"(none)", "@/sbin/ldconfig", "/sbin/ldconfig"}) {
        expected +=
            std::string(kind) + " " + config + " " + path + ": ok, cache file, marker in root missing\n";
      }
    }
  }
  EXPECT_EQ(report, expected + "lib plain: ok\n");
  // The key is named once per run that had it: three runs for each program.
  const std::string logged = read_file(log).value_or("");
  size_t warnings = 0;
  const std::string warning =
      "update-ldcache: allow-ldconfig-from-container is no longer used: --ldconfig-path \"/sbin/ldconfig\" "
      "names the host's ldconfig, and an image's is never run";
  EXPECT_NE(logged.find(warning), std::string::npos) << logged;
  for (size_t at = logged.find("allow-ldconfig-from-container is no longer used"); at != std::string::npos;
       at = logged.find("allow-ldconfig-from-container is no longer used", at + 1)) {
    ++warnings;
  }
  EXPECT_EQ(warnings, 6U) << logged;
}

// CVE-2025-23266 (LD_PRELOAD into the hook): the container's config.json sets LD_PRELOAD and
// LD_LIBRARY_PATH to a library of the image, and the image has an /etc/ld.so.preload. The runtime
// runs hooks with the spec's environment, not the container's: no hook may load the library.
TEST_P(HostileImageTest, LdPreloadInTheContainersEnvironmentIsNeverLoaded) {
  const std::string marker = m_image.m_base + "/preload-marker";
  const std::string source = m_image.m_scratch.write(
      "evil.c",
      "#include <fcntl.h>\n#include <unistd.h>\n__attribute__((constructor)) static void evil(void) {\n"
      "  int fd = open(\"" +
          marker +
          "\", O_WRONLY | O_CREAT | O_APPEND, 0644);\n"
          "  if (fd >= 0) { write(fd, \"loaded\\n\", 7); close(fd); }\n}\n");
  const std::string library = m_image.m_root + "/usr/lib/libevil.so";
  if (std::system(("cc -shared -fPIC -o " + library + " " + source + " >/dev/null 2>&1").c_str()) != 0) {
    GTEST_SKIP() << "cannot build a shared library here (cc -shared)";
  }
  make_host_link("../libevil.so", m_image.m_root + std::string(k_triplet_dir) + "/libevil.so");
  write_host_file(m_image.m_root + "/etc/ld.so.preload", "/usr/lib/libevil.so\n");
  m_image.write_config_json(
      R"(["PATH=/usr/bin:/bin","LD_PRELOAD=/usr/lib/libevil.so","LD_LIBRARY_PATH=/usr/lib"])");
  // Control: the library does write the marker when it is preloaded (by its host path).
  const std::string control = "LD_PRELOAD=" + library + " /bin/true";
  ASSERT_EQ(std::system(control.c_str()), 0);
  ASSERT_EQ(read_file(marker).value_or(""), "loaded\n");
  ASSERT_EQ(::unlink(marker.c_str()), 0);

  const std::string before_outside = m_image.outside();
  std::string report;
  report +=
      "create-symlinks: " + hook_outcome(m_image.hook({"create-symlinks", "--link", "a::/usr/lib/a-link"})) +
      "\n";
  SKIP_WITHOUT_LDCONFIG();
  report +=
      "update-ldcache: " + hook_outcome(m_image.hook({"update-ldcache", "--folder", "/usr/lib"})) + "\n";
  report += "enable-cuda-compat: " +
            hook_outcome(m_image.hook({"enable-cuda-compat", "--host-driver-version", "550.54.15"})) + "\n";
  report += "chmod: " + hook_outcome(m_image.hook({"chmod", "--mode", "755", "--path", "/usr/lib"})) + "\n";
  report += "disable-device-node-modification: " +
            hook_outcome(m_image.hook({"disable-device-node-modification"})) + "\n";
  EXPECT_EQ(report,
            "create-symlinks: ok\n"
            "update-ldcache: ok\n"
            "enable-cuda-compat: ok\n"
            "chmod: ok\n"
            "disable-device-node-modification: ok\n");
  EXPECT_EQ(host_kind(marker), "missing");
  EXPECT_EQ(m_image.outside(), before_outside);
}

// CVE-2024-0132/0133 (host files through image symlinks in mount targets): the container's
// /proc/driver/nvidia/params (or its directory) is a symlink to a host file. The read-only copy must
// never be mounted over the host file. Run in a child in a private mount namespace.
TEST_P(HostileImageTest, DisableDeviceNodeModificationNeverMountsOverAHostFile) {
  if (!test::can_unshare_mounts()) {
    GTEST_SKIP() << "cannot make a private mount namespace here";
  }
  // The host's params (dev-root) say the driver may create device nodes.
  const std::string dev_root = m_image.m_scratch.path() + "/devroot";
  write_host_file(dev_root + "/proc/driver/nvidia/params",
                  "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\n");
  m_image.set_config("dev-root: " + dev_root + "\n");
  const std::string host_params = m_image.m_sentinel + "/params";
  const Resolver resolver = GetParam();
  const HostileImageFixture& image = m_image;
  std::string report;
  for (const char* how : {"file-link", "dir-link", "dir-link-slash", "regular"}) {
    m_image.reset_root();
    const std::string kind = how;
    if (kind == "file-link") {
      make_host_link(host_params, m_image.m_root + "/proc/driver/nvidia/params");
    } else if (kind == "dir-link") {
      make_host_link(m_image.m_sentinel, m_image.m_root + "/proc/driver/nvidia");
    } else if (kind == "dir-link-slash") {
      write_host_file(m_image.m_root + "/params", "ModifyDeviceFiles: 1\n");
      make_host_link("/", m_image.m_root + "/proc/driver/nvidia");
    } else {
      write_host_file(m_image.m_root + "/proc/driver/nvidia/params", "ModifyDeviceFiles: 1\n");
    }
    const std::string before_outside = m_image.outside();
    // What a reader sees now, in this namespace, at the host file and in the container.
    const auto seen = [&]() {
      return ", host file " + quote(read_file(host_params).value_or("<unreadable>")) + ", container " +
             quote(read_file(image.m_root + "/proc/driver/nvidia/params").value_or("<unreadable>")) +
             ", root /params " + quote(read_file(image.m_root + "/params").value_or("<none>"));
    };
    report += kind + ": " + test::in_private_mount_ns([&]() -> std::string {
                auto root = image.open(resolver);
                if (!root) {
                  return root.error().message;
                }
                std::string out = "lib " + lib_outcome(steps::disable_device_node_modification(
                                               *root, dev_root + "/proc/driver/nvidia/params"));
                return out + seen();
              }) +
              "\n";
    report += kind + " (cli): " + test::in_private_mount_ns([&]() -> std::string {
                std::string out = hook_outcome(image.hook({"disable-device-node-modification"}));
                return out + seen();
              }) +
              "\n";
    EXPECT_EQ(m_image.outside(), before_outside) << how;
  }
  EXPECT_EQ(read_file(host_params).value_or(""), "ModifyDeviceFiles: 1\n");
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(file-link: lib error: mount over /proc/driver/nvidia/params in container root <root>: not a regular file, host file "ModifyDeviceFiles: 1\n", container "ModifyDeviceFiles: 1\n", root /params "<none>"
file-link (cli): gpuctk: error: disable-device-node-modification: mount over /proc/driver/nvidia/params in container root <root>: not a regular file, host file "ModifyDeviceFiles: 1\n", container "ModifyDeviceFiles: 1\n", root /params "<none>"
dir-link: lib ok, host file "ModifyDeviceFiles: 1\n", container "ModifyDeviceFiles: 1\n", root /params "<none>"
dir-link (cli): ok, host file "ModifyDeviceFiles: 1\n", container "ModifyDeviceFiles: 1\n", root /params "<none>"
dir-link-slash: lib ok, host file "ModifyDeviceFiles: 1\n", container "<unreadable>", root /params "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 0\n"
dir-link-slash (cli): ok, host file "ModifyDeviceFiles: 1\n", container "<unreadable>", root /params "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 0\n"
regular: lib ok, host file "ModifyDeviceFiles: 1\n", container "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 0\n", root /params "<none>"
regular (cli): ok, host file "ModifyDeviceFiles: 1\n", container "ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 0\n", root /params "<none>"
)x");
}

// CVE-2024-0132/0133 and CVE-2025-23267 with a real procfs in the root, as at createContainer time
// (the runtime has mounted /proc in the root): directories that are links to /proc/self/root and
// /proc/1/root, magic links to the host's root. Run in a child in a private mount namespace.
TEST_P(HostileImageTest, MagicLinksThroughAProcfsInTheRoot) {
  if (!test::can_unshare_mounts()) {
    GTEST_SKIP() << "cannot make a private mount namespace here";
  }
  SKIP_WITHOUT_LDCONFIG();
  const Resolver resolver = GetParam();
  const HostileImageFixture& image = m_image;
  std::string report;
  for (const char* dir : {k_triplet_dir, "/etc"}) {
    for (const char* target : {"/proc/self/root", "/proc/1/root", "/proc/self/cwd"}) {
      for (const bool cli : {false, true}) {
        m_image.reset_root();
        make_host_dirs(m_image.m_root + "/proc");
        make_host_link(target, m_image.m_root + dir);
        const std::string before_outside = m_image.outside();
        const std::string before_root = m_image.root_digest();
        const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
          const std::string proc = image.m_root + "/proc";
          if (::mount("proc", proc.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
            return "cannot mount a procfs in the root";
          }
          const std::string link = std::string(k_triplet_dir) + "/libcuda.so.1";
          if (cli) {
            return "links " +
                   hook_outcome(image.hook({"create-symlinks", "--link", "libcuda.so.550::" + link})) +
                   " | ldcache " + hook_outcome(image.hook({"update-ldcache", "--folder", k_triplet_dir}));
          }
          auto root = image.open(resolver);
          if (!root) {
            return root.error().message;
          }
          auto ldconfig = seal_host_program("/sbin/ldconfig");
          if (!ldconfig) {
            return ldconfig.error().message;
          }
          return "links " + lib_outcome(steps::create_symlinks(*root, {{"libcuda.so.550", link}})) +
                 " | ldcache " + lib_outcome(ldcache::update_ld_cache(*root, {k_triplet_dir}, *ldconfig));
        });
        EXPECT_EQ(m_image.outside(), before_outside) << dir << " -> " << target;
        report += std::string(dir) + " -> " + target + (cli ? " (cli)" : "") + ": " + outcome +
                  "; changed: " + changed_paths(before_root, m_image.root_digest()) + "\n";
      }
    }
  }
  EXPECT_EQ(
      refusals_alike(m_image.normalise(report)),
      refusals_alike(
          automatic()
              ? std::string(
                    R"x(/usr/lib/x86_64-linux-gnu -> /proc/self/root: links error: /usr/lib/x86_64-linux-gnu in container root <root>: Too many levels of symbolic links | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/self/root (cli): links gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Too many levels of symbolic links | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/1/root: links error: /usr/lib/x86_64-linux-gnu in container root <root>: Permission denied | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/1/root (cli): links gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Permission denied | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/self/cwd: links error: /usr/lib/x86_64-linux-gnu in container root <root>: Too many levels of symbolic links | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/self/cwd (cli): links gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Too many levels of symbolic links | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc -> /proc/self/root: links ok | ldcache error: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/self/root (cli): links ok | ldcache gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/1/root: links ok | ldcache error: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/1/root (cli): links ok | ldcache gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/self/cwd: links ok | ldcache error: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/self/cwd (cli): links ok | ldcache gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
)x")
              : std::string(
                    R"x(/usr/lib/x86_64-linux-gnu -> /proc/self/root: links ok | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf ./libcuda.so.1
/usr/lib/x86_64-linux-gnu -> /proc/self/root (cli): links gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Too many levels of symbolic links | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/1/root: links error: /usr/lib/x86_64-linux-gnu in container root <root>: Permission denied | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/1/root (cli): links gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Permission denied | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/self/cwd: links error: /usr/lib/x86_64-linux-gnu in container root <root>: Not a directory | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/usr/lib/x86_64-linux-gnu -> /proc/self/cwd (cli): links gpuctk: error: create-symlinks: /usr/lib/x86_64-linux-gnu in container root <root>: Too many levels of symbolic links | ldcache ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
/etc -> /proc/self/root: links ok | ldcache ok; changed: ./ld.so.cache ./ld.so.conf ./ld.so.conf.d ./ld.so.conf.d/00-gpuctk-driver.conf ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/self/root (cli): links ok | ldcache gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/1/root: links ok | ldcache error: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/1/root (cli): links ok | ldcache gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/self/cwd: links ok | ldcache error: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
/etc -> /proc/self/cwd (cli): links ok | ldcache gpuctk: error: update-ldcache: the container has no /etc directory, so its linker cache cannot be updated (container root <root>); changed: ./usr/lib/x86_64-linux-gnu/libcuda.so.1
)x")));
}

// CVE-2024-0132/0133 for chmod: the paths are links out of the root, or through a directory that is.
// update-application-profile, a step of every gpuctk spec's container-start: an image whose /etc/nvidia
// (where the profile goes) leads out of the root gets the profile inside its own root ("/" and ".." are
// the root itself) or one error line (a link to a path the root lacks), never a file outside it.
TEST_P(HostileImageTest, UpdateApplicationProfileStaysInTheRoot) {
  std::string report;
  for (const auto& escape : escapes(m_image.m_sentinel)) {
    for (const bool cli : {false, true}) {
      m_image.reset_root();
      ASSERT_EQ(::mknod((m_image.m_root + "/dev/nvidia2").c_str(), S_IFCHR | 0666, ::makedev(195, 2)), 0);
      make_host_link(escape.target == m_image.m_sentinel ? escape.target + "/etc" : escape.target,
                     m_image.m_root + "/etc/nvidia");
      const std::string before_outside = m_image.outside();
      const std::string before_root = m_image.root_digest();
      std::string outcome;
      if (cli) {
        outcome = hook_outcome(m_image.hook({"container-start", "--update-application-profile"}));
      } else {
        outcome = lib_outcome(steps::update_application_profile(root(), config::Log{}));
      }
      EXPECT_EQ(m_image.outside(), before_outside) << escape.name;
      report += std::string(escape.name) + (cli ? " (cli)" : "") + ": " + outcome +
                "; changed: " + changed_paths(before_root, m_image.root_digest()) + "\n";
    }
  }
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(slash: ok; changed: ./nvidia-application-profiles-rc.d ./nvidia-application-profiles-rc.d/10-container.conf
slash (cli): ok; changed: ./nvidia-application-profiles-rc.d ./nvidia-application-profiles-rc.d/10-container.conf
dotdot: ok; changed: ./nvidia-application-profiles-rc.d ./nvidia-application-profiles-rc.d/10-container.conf
dotdot (cli): ok; changed: ./nvidia-application-profiles-rc.d ./nvidia-application-profiles-rc.d/10-container.conf
sentinel: error: /etc/nvidia in container root <root>: Not a directory; changed: nothing
sentinel (cli): gpuctk: error: update-application-profile: /etc/nvidia in container root <root>: Not a directory; changed: nothing
proc-self-root: error: /etc/nvidia in container root <root>: Not a directory; changed: nothing
proc-self-root (cli): gpuctk: error: update-application-profile: /etc/nvidia in container root <root>: Not a directory; changed: nothing
proc-1-root: error: /etc/nvidia in container root <root>: Not a directory; changed: nothing
proc-1-root (cli): gpuctk: error: update-application-profile: /etc/nvidia in container root <root>: Not a directory; changed: nothing
)x");
}

TEST_P(HostileImageTest, ChmodNeverChangesAHostFile) {
  std::string report;
  for (const auto& escape : escapes(m_image.m_sentinel)) {
    for (const bool cli : {false, true}) {
      m_image.reset_root();
      make_host_link(escape.target == m_image.m_sentinel ? escape.target + "/dev/dri" : escape.target,
                     m_image.m_root + "/dev/dri");
      make_host_link(m_image.m_sentinel + "/dev/dri/card0", m_image.m_root + "/dev/card0");
      const std::string before_outside = m_image.outside();
      const std::string before_root = m_image.root_digest();
      std::string outcome;
      for (const char* path : {"/dev/dri", "/dev/dri/card0", "/dev/card0"}) {
        if (cli) {
          outcome += std::string(" ") + path + " " +
                     hook_outcome(m_image.hook({"chmod", "--mode", "777", "--path", path}));
        } else {
          outcome += std::string(" ") + path + " " + lib_outcome(steps::chmod_paths(root(), 0777, {path}));
        }
      }
      EXPECT_EQ(m_image.outside(), before_outside) << escape.name;
      report += std::string(escape.name) + (cli ? " (cli)" : "") + ":" + outcome +
                "; changed: " + changed_paths(before_root, m_image.root_digest()) + "\n";
    }
  }
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(slash: /dev/dri error: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 error: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 error: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
slash (cli): /dev/dri gpuctk: error: chmod: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 gpuctk: error: chmod: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 gpuctk: error: chmod: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
dotdot: /dev/dri error: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 error: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 error: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
dotdot (cli): /dev/dri gpuctk: error: chmod: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 gpuctk: error: chmod: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 gpuctk: error: chmod: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
sentinel: /dev/dri error: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 error: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 error: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
sentinel (cli): /dev/dri gpuctk: error: chmod: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 gpuctk: error: chmod: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 gpuctk: error: chmod: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
proc-self-root: /dev/dri error: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 error: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 error: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
proc-self-root (cli): /dev/dri gpuctk: error: chmod: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 gpuctk: error: chmod: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 gpuctk: error: chmod: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
proc-1-root: /dev/dri error: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 error: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 error: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
proc-1-root (cli): /dev/dri gpuctk: error: chmod: chmod /dev/dri in container root <root>: is a symlink /dev/dri/card0 gpuctk: error: chmod: /dev/dri/card0 in container root <root>: No such file or directory /dev/card0 gpuctk: error: chmod: chmod /dev/card0 in container root <root>: is a symlink; changed: nothing
)x");
}

}  // namespace
}  // namespace gpuctk::rootfs

namespace gpuctk::rootfs {
namespace {

// CVE-2025-23267 class (update-ldcache reading what the image points it at) and denial of service: the
// image's /etc/ld.so.conf and its includes are read by gpuctk (to leave folders the image configures in
// their place) and then by the host's ldconfig. Includes of host paths, absolute or through links,
// resolve inside the root; an include loop, a file too large, thousands of files or a FIFO (which would
// block ldconfig for ever) fail with one line before anything is written.
TEST_P(HostileImageTest, UpdateLdcacheOverAHostileLinkerConfiguration) {
  SKIP_WITHOUT_LDCONFIG();
  // A configuration on the host naming the sentinel's library directory: an ldconfig that read it would
  // make the SONAME link libz.so.1 there.
  const std::string sentinel = m_image.m_sentinel;
  write_host_file(sentinel + "/etc/ld.so.conf.d/sentinel.conf", sentinel + "/usr/lib/x86_64-linux-gnu\n");
  const std::string root = m_image.m_root;
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"absolute-include",
       [&] {
         write_host_file(root + "/etc/ld.so.conf", "include " + sentinel + "/etc/ld.so.conf.d/*.conf\n");
       }},
      {"dotdot-include",
       [&] {
         write_host_file(root + "/etc/ld.so.conf",
                         "include ../../../../../../../../.." + sentinel + "/etc/ld.so.conf.d/*.conf\n");
       }},
      {"links-out",
       [&] {
         write_host_file(root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
         make_host_link(sentinel + "/etc/ld.so.conf.d/sentinel.conf", root + "/etc/ld.so.conf.d/a.conf");
         make_host_link("/proc/self/root" + sentinel + "/etc/ld.so.conf.d/sentinel.conf",
                        root + "/etc/ld.so.conf.d/b.conf");
         make_host_link(sentinel + "/etc/ld.so.conf.d", root + "/etc/conf-out");
         write_host_file(root + "/etc/ld.so.conf.d/c.conf", "include /etc/conf-out/*.conf\n");
       }},
      {"include-loop",
       [&] {
         write_host_file(root + "/etc/ld.so.conf", "include /etc/ld.so.conf\ninclude /etc/ld.so.conf\n");
       }},
      {"huge-file",
       [&] {
         write_host_file(root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
         write_host_file(root + "/etc/ld.so.conf.d/huge.conf", std::string(1 << 20, '#'));
       }},
      {"thousands-of-files",
       [&] {
         write_host_file(root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
         for (int i = 0; i < 1000; ++i) {
           write_host_file(root + "/etc/ld.so.conf.d/" + std::to_string(10000 + i) + ".conf", "/opt\n");
         }
       }},
      {"fifo",
       [&] {
         write_host_file(root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
         make_host_dirs(root + "/etc/ld.so.conf.d");
         ::mkfifo((root + "/etc/ld.so.conf.d/fifo.conf").c_str(), 0644);
       }},
  };
  std::string report;
  for (const auto& [name, build] : cases) {
    for (const bool cli : {false, true}) {
      m_image.reset_root();
      build();
      const std::string before_outside = m_image.outside();
      const std::string before_root = m_image.root_digest();
      std::string outcome;
      if (cli) {
        outcome = hook_outcome(m_image.hook({"update-ldcache", "--folder", "/opt/driver"}));
      } else {
        auto ldconfig = seal_host_program("/sbin/ldconfig");
        ASSERT_TRUE(ldconfig) << ldconfig.error().message;
        outcome = lib_outcome(ldcache::update_ld_cache(this->root(), {"/opt/driver"}, *ldconfig));
      }
      EXPECT_EQ(m_image.outside(), before_outside) << name;
      EXPECT_EQ(host_kind(sentinel + "/usr/lib/x86_64-linux-gnu/libz.so.1"), "missing") << name;
      report += name + (cli ? " (cli)" : "") + ": " + outcome +
                "; changed: " + changed_paths(before_root, m_image.root_digest()) + "\n";
    }
  }
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(absolute-include: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
absolute-include (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
dotdot-include: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
dotdot-include (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d ./etc/ld.so.conf.d/00-gpuctk-driver.conf
links-out: ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d/00-gpuctk-driver.conf
links-out (cli): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d/00-gpuctk-driver.conf
include-loop: error: the image's linker configuration: "/etc/ld.so.conf" is included while it is read (an include loop); changed: nothing
include-loop (cli): gpuctk: error: update-ldcache: the image's linker configuration: "/etc/ld.so.conf" is included while it is read (an include loop); changed: nothing
huge-file: error: the image's linker configuration: read /etc/ld.so.conf.d/huge.conf in container root <root>: larger than 65536 bytes; changed: nothing
huge-file (cli): gpuctk: error: update-ldcache: the image's linker configuration: read /etc/ld.so.conf.d/huge.conf in container root <root>: larger than 65536 bytes; changed: nothing
thousands-of-files: error: the image's linker configuration: more than 256 files (at "/etc/ld.so.conf.d/*.conf"); changed: nothing
thousands-of-files (cli): gpuctk: error: update-ldcache: the image's linker configuration: more than 256 files (at "/etc/ld.so.conf.d/*.conf"); changed: nothing
fifo: error: the image's linker configuration: /etc/ld.so.conf.d/fifo.conf in container root <root>: not a regular file; changed: nothing
fifo (cli): gpuctk: error: update-ldcache: the image's linker configuration: /etc/ld.so.conf.d/fifo.conf in container root <root>: not a regular file; changed: nothing
)x");
}

// CVE-2024-0132/0133 class for musl's path file: on a musl image (Alpine) update-ldcache writes the
// folders into /etc/ld-musl-x86_64.path and runs no ldconfig. A path file that links to a host file
// (absolute, through "..", through /proc/self/root) is the image's path, resolved inside the root: the
// link is replaced by a file of the image, the host file is never read or written. A directory, a FIFO
// (which would block the hook) or a huge file fail with one line and change nothing.
TEST_P(HostileImageTest, UpdateLdcacheOnAMuslImageWithAHostilePathFile) {
  const std::string root = m_image.m_root;
  const std::string path_file = root + "/etc/ld-musl-x86_64.path";
  const std::string host_file = m_image.m_sentinel + "/etc/passwd";
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"none", [] {}},
      {"image-file", [&] { write_host_file(path_file, "/lib:/usr/lib\n"); }},
      {"link-to-host-file", [&] { make_host_link(host_file, path_file); }},
      {"dotdot-link", [&] { make_host_link("../../../../../../../../.." + host_file, path_file); }},
      {"proc-self-root-link", [&] { make_host_link("/proc/self/root" + host_file, path_file); }},
      {"directory", [&] { make_host_dirs(path_file); }},
      {"fifo", [&] { ::mkfifo(path_file.c_str(), 0644); }},
      {"huge", [&] { write_host_file(path_file, std::string(1 << 20, ':')); }},
  };
  std::string report;
  for (const auto& [name, build] : cases) {
    m_image.reset_root();
    write_host_file(root + "/lib/ld-musl-x86_64.so.1", "musl", 0755);
    build();
    const std::string before_outside = m_image.outside();
    const std::string before_root = m_image.root_digest();
    const std::string outcome = hook_outcome(m_image.hook({"update-ldcache", "--folder", k_triplet_dir}));
    EXPECT_EQ(m_image.outside(), before_outside) << name;
    const std::string kind = host_kind(path_file);
    const std::string text = kind == "file" ? read_file(path_file).value_or("<unreadable>") : "";
    report += name + ": " + outcome + "; changed: " + changed_paths(before_root, m_image.root_digest()) +
              "; path file: " +
              (kind != "file"      ? kind
               : text.size() > 256 ? std::to_string(text.size()) + " bytes"
                                   : quote(text)) +
              "\n";
  }
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(none: ok; changed: ./etc/ld-musl-x86_64.path; path file: "/usr/lib/x86_64-linux-gnu\n/lib\n/usr/local/lib\n/usr/lib\n"
image-file: ok; changed: ./etc/ld-musl-x86_64.path; path file: "/usr/lib/x86_64-linux-gnu\n/lib:/usr/lib\n"
link-to-host-file: ok; changed: ./etc/ld-musl-x86_64.path; path file: "/usr/lib/x86_64-linux-gnu\n/lib\n/usr/local/lib\n/usr/lib\n"
dotdot-link: ok; changed: ./etc/ld-musl-x86_64.path; path file: "/usr/lib/x86_64-linux-gnu\n/lib\n/usr/local/lib\n/usr/lib\n"
proc-self-root-link: ok; changed: ./etc/ld-musl-x86_64.path; path file: "/usr/lib/x86_64-linux-gnu\n/lib\n/usr/local/lib\n/usr/lib\n"
directory: gpuctk: error: update-ldcache: /etc/ld-musl-x86_64.path in container root <root>: is a directory; changed: nothing; path file: dir
fifo: gpuctk: error: update-ldcache: /etc/ld-musl-x86_64.path in container root <root>: not a regular file; changed: nothing; path file: other
huge: gpuctk: error: update-ldcache: read /etc/ld-musl-x86_64.path in container root <root>: larger than 65536 bytes; changed: nothing; path file: 1048576 bytes
)x");
}

// Issue 21 items 1, 3 and 5: ldconfig made to do an attacker's bidding (a host ldconfig compromised by
// a crafted input; here a probe program given as --ldconfig-path), run by the hook with a procfs mounted in
// the root (as the container's is at createContainer), a file only the image's root may read, a library-named
// link to a device node the image ships (a watchdog's, c 10:229, in the attack; here c 1:3, harmless to open)
// and a descriptor to the host's "/" that the hook inherited without close-on-exec. It reaches nothing: no
// host sysctl, core_pattern or sysrq-trigger (no /proc), no write in the root (read-only), not the device
// (nodev), no inherited descriptor (so no host file through one); only its scratch directory. The image's
// root-only file it reads, as root's ldconfig would (issue 33 item 6: the root's own filesystem is idmapped
// to the sandbox): the image's data, read-only, never the host's.
TEST_P(HostileImageTest, TheImagesLdconfigReachesNothingFromInsideTheSandbox) {
  if (!test::can_unshare_mounts()) {
    GTEST_SKIP() << "cannot make a private mount namespace here";
  }
  const std::string host_secret = m_image.m_sentinel + "/shadow";
  write_host_file(host_secret, "sentinel shadow", 0600);
  const std::string probe = test::build_sandbox_probe(m_image.m_scratch, host_secret.substr(1));
  if (probe.empty()) {
    GTEST_SKIP() << "cannot build a static program here (cc -static)";
  }
  write_host_file(m_image.m_root + "/etc/secret", "image secret", 0600);
  make_host_dirs(m_image.m_root + "/proc");
  ASSERT_EQ(::mknod((m_image.m_root + "/dev/watchdog").c_str(), S_IFCHR | 0600, makedev(1, 3)), 0);
  make_host_link("/dev/watchdog", m_image.m_root + k_triplet_dir + "/libwatchdog.so.1");
  const std::string before_outside = m_image.outside();
  const std::string before_root = m_image.root_digest();
  const HostileImageFixture& image = m_image;
  const std::string outcome = test::in_private_mount_ns([&]() -> std::string {
    const std::string proc = image.m_root + "/proc";
    if (::mount("proc", proc.c_str(), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
      return "cannot mount a procfs in the root";
    }
    const UniqueFd host_root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!host_root || ::dup2(host_root.get(), 100) != 100) {  // without close-on-exec: the hook inherits it
      return "cannot open /";
    }
    return hook_outcome(image.hook({"update-ldcache", "--ldconfig-path", probe, "--folder", k_triplet_dir}));
  });
  EXPECT_EQ(
      outcome,
      "gpuctk: error: update-ldcache: ldconfig exited with status 3: \"printk=ENOENT core_pattern=ENOENT "
      "sysrq=ENOENT proc=0 write_root=EROFS secret=ok device=EACCES fds=none host_secret=none "
      "scratch=ok uid=0\"");
  EXPECT_EQ(m_image.outside(), before_outside);
  EXPECT_EQ(changed_paths(before_root, m_image.root_digest()), "nothing");
}

// Issue 21 item 4: a library-named link to a FIFO of the image makes ldconfig block in open() for ever
// (a plain FIFO named like a library is skipped; the link is followed). It is killed at the sandbox's
// deadline and update-ldcache fails with one line, the root as it was: the container start does not hang.
TEST_P(HostileImageTest, AFifoBehindALibraryNameEndsAtTheDeadline) {
  SKIP_WITHOUT_LDCONFIG();
  ASSERT_EQ(::mkfifo((m_image.m_root + "/fifo").c_str(), 0666), 0);
  make_host_link("/fifo", m_image.m_root + k_triplet_dir + "/libfifo.so.1");
  const std::string before_outside = m_image.outside();
  const std::string before_root = m_image.root_digest();
  auto ldconfig = seal_host_program("/sbin/ldconfig");
  ASSERT_TRUE(ldconfig) << ldconfig.error().message;
  const auto start = std::chrono::steady_clock::now();
  const auto r =
      ldcache::update_ld_cache(root(), {k_triplet_dir}, *ldconfig,
                               {.deadline = std::chrono::seconds(2), .cgroup = nullptr, .note = {}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(lib_outcome(r),
            "error: ldconfig was killed after its deadline of 2 s (a FIFO or a device in the image can block "
            "it)");
  EXPECT_EQ(m_image.outside(), before_outside);
  EXPECT_EQ(changed_paths(before_root, m_image.root_digest()), "nothing");
}

// The cache that ldconfig leaves (here a probe given as --ldconfig-path) is checked before it is installed:
// none at all, or a file that is not a glibc linker cache, is one line, and the root stays as it was.
TEST_P(HostileImageTest, ACacheTheImagesLdconfigMadeUpIsNeverInstalled) {
  const std::string probe = test::build_sandbox_probe(m_image.m_scratch);
  if (probe.empty()) {
    GTEST_SKIP() << "cannot build a static program here (cc -static)";
  }
  std::string report;
  for (const char* mode : {"silent", "junk"}) {
    m_image.reset_root();
    write_host_file(m_image.m_root + "/etc/probe-mode", std::string(mode) + "\n");
    const std::string before_outside = m_image.outside();
    const std::string before_root = m_image.root_digest();
    const std::string outcome =
        hook_outcome(m_image.hook({"update-ldcache", "--ldconfig-path", probe, "--folder", k_triplet_dir}));
    EXPECT_EQ(m_image.outside(), before_outside) << mode;
    report += std::string(mode) + ": " + without_scratch_names(outcome) +
              "; changed: " + changed_paths(before_root, m_image.root_digest()) + "\n";
  }
  EXPECT_EQ(
      report,
      R"x(silent: gpuctk: error: update-ldcache: ldconfig wrote no linker cache: /etc/.ldconfig.gpuctk-X/ld.so.cache: No such file or directory; changed: nothing
junk: gpuctk: error: update-ldcache: ldconfig wrote /etc/.ldconfig.gpuctk-X/ld.so.cache, which is not a glibc linker cache (it starts with neither "glibc-ld.so.cache1.1" nor "ld.so-1.7.0"); not installed; changed: nothing
)x");
}

}  // namespace
}  // namespace gpuctk::rootfs

namespace gpuctk::rootfs {
namespace {

// A node of `kind` ("char device": c 1:3, the null device, harmless to open; "fifo"; "socket") at the host
// path `path`; "" or why it could not be made.
std::string make_node(const std::string& path, const std::string& kind) {
  make_host_dirs(path.substr(0, path.rfind('/')));
  if (kind == "char device") {
    return ::mknod(path.c_str(), S_IFCHR | 0600, makedev(1, 3)) == 0 ? "" : "mknod failed";
  }
  if (kind == "fifo") {
    return ::mkfifo(path.c_str(), 0644) == 0 ? "" : "mkfifo failed";
  }
  const UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (!sock || path.size() >= sizeof address.sun_path) {
    return "no socket for " + path;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return ::bind(sock.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 ? ""
                                                                                              : "bind failed";
}

// How many IN_OPEN events the inotify fd `watch` holds (read without blocking).
int opens_seen(int watch) {
  int opens = 0;
  alignas(inotify_event) char events[4096];
  for (ssize_t n; (n = ::read(watch, events, sizeof events)) > 0;) {
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(events + at);
      opens += (event->mask & IN_OPEN) != 0 ? 1 : 0;
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  return opens;
}

// Issue 33 item 1: under `hook prestart` (and in each createContainer hook) root worked on files the image
// ships, and opened some before it checked what they were: write_file's check for an unchanged file opened
// an existing target (the linker cache, the CUDA compat drop-in, the driver drop-in), the compat note reader
// opened the library by name after a stat. Opening a device node can have effects (a watchdog armed without
// its magic close reboots the node). Here every path the hooks read or write in a root is a character
// device (watched with inotify: it must never be opened), a FIFO (the hook must not block: each run is
// bounded) or a socket. Each hook either replaces the node with its own file, leaves it as it is, or fails
// with one line; nothing outside the root changes.
TEST_P(HostileImageTest, ANodeWhereTheHooksReadOrWriteIsNeverOpened) {
  SKIP_WITHOUT_LDCONFIG();
  const auto compat =
      read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/data/cuda_compat/libcuda.so.575.57.08");
  ASSERT_TRUE(compat) << compat.error().message;
  const std::string root = m_image.m_root;
  const std::string compat_lib = "/usr/local/cuda/compat/libcuda.so.575.57.08";
  const std::vector<std::string> ldcache{"update-ldcache", "--folder", "/opt/driver"};
  const std::vector<std::string> cuda_compat{"enable-cuda-compat", "--host-driver-version", "570.211.01"};
  const auto glibc = [&] { write_host_file(root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n"); };
  struct Case {
    std::string path;
    std::vector<std::string> hook;
    std::function<void()> image;
  };
  const std::vector<Case> cases = {
      {"/etc/ld.so.cache", ldcache, glibc},
      // An ld.so.conf without the include: the drop-in is written all the same, and read by no one first.
      {"/etc/ld.so.conf.d/00-gpuctk-driver.conf", ldcache,
       [&] { write_host_file(root + "/etc/ld.so.conf", "/usr/lib\n"); }},
      {"/etc/ld.so.conf", ldcache, [] {}},
      {"/etc/ld.so.conf.d/00-gpuctk-compat.conf", cuda_compat,
       [&] { write_host_file(root + compat_lib, *compat, 0755); }},
      {compat_lib, cuda_compat, [] {}},
      {"/etc/ld-musl-x86_64.path",
       {"update-ldcache", "--folder", k_triplet_dir},
       [&] { write_host_file(root + "/lib/ld-musl-x86_64.so.1", "musl", 0755); }},
      {std::string(k_triplet_dir) + "/libnode.so.1",
       {"update-ldcache", "--folder", k_triplet_dir},
       [&] { write_host_file(root + "/lib/ld-musl-x86_64.so.1", "musl", 0755); }},
      {std::string(k_triplet_dir) + "/libcuda.so",
       {"create-symlinks", "--link", "libcuda.so.1::" + std::string(k_triplet_dir) + "/libcuda.so"},
       [] {}},
      {"/dev/nvidia0", {"chmod", "--mode", "666", "--path", "/dev/nvidia0"}, [] {}},
      {"/proc/driver/nvidia/params", {"disable-device-node-modification"}, [] {}},
  };
  std::string report;
  for (const auto& c : cases) {
    for (const std::string kind : {"char device", "fifo", "socket"}) {
      m_image.reset_root();
      make_host_dirs(root + "/etc/ld.so.conf.d");
      c.image();
      ASSERT_EQ(make_node(root + c.path, kind), "") << c.path;
      const UniqueFd watch(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
      ASSERT_TRUE(watch);
      ASSERT_GE(::inotify_add_watch(watch.get(), (root + c.path).c_str(), IN_OPEN), 0) << c.path;
      const std::string before_outside = m_image.outside();
      const std::string before_root = m_image.root_digest();
      const std::string outcome = hook_outcome(m_image.hook(c.hook, test::clean_hook_env(), 20));
      EXPECT_EQ(m_image.outside(), before_outside) << c.path << " as " << kind;
      const int opens = opens_seen(watch.get());
      report += c.path + " as " + kind + " (" + c.hook.front() + "): " + outcome +
                (opens > 0 ? "; OPENED " + std::to_string(opens) + " times" : "") +
                "; changed: " + changed_paths(before_root, m_image.root_digest()) +
                "; now: " + host_kind(root + c.path) + "\n";
    }
  }
  EXPECT_EQ(
      m_image.normalise(report),
      R"x(/etc/ld.so.cache as char device (update-ldcache): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d/00-gpuctk-driver.conf; now: file
/etc/ld.so.cache as fifo (update-ldcache): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d/00-gpuctk-driver.conf; now: file
/etc/ld.so.cache as socket (update-ldcache): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d/00-gpuctk-driver.conf; now: file
/etc/ld.so.conf.d/00-gpuctk-driver.conf as char device (update-ldcache): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d/00-gpuctk-driver.conf; now: file
/etc/ld.so.conf.d/00-gpuctk-driver.conf as fifo (update-ldcache): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d/00-gpuctk-driver.conf; now: file
/etc/ld.so.conf.d/00-gpuctk-driver.conf as socket (update-ldcache): ok; changed: ./etc/ld.so.cache ./etc/ld.so.conf.d/00-gpuctk-driver.conf; now: file
/etc/ld.so.conf as char device (update-ldcache): gpuctk: error: update-ldcache: the image's linker configuration: /etc/ld.so.conf in container root <root>: not a regular file; changed: nothing; now: other
/etc/ld.so.conf as fifo (update-ldcache): gpuctk: error: update-ldcache: the image's linker configuration: /etc/ld.so.conf in container root <root>: not a regular file; changed: nothing; now: other
/etc/ld.so.conf as socket (update-ldcache): gpuctk: error: update-ldcache: the image's linker configuration: /etc/ld.so.conf in container root <root>: not a regular file; changed: nothing; now: other
/etc/ld.so.conf.d/00-gpuctk-compat.conf as char device (enable-cuda-compat): ok; changed: ./etc/ld.so.conf.d/00-gpuctk-compat.conf; now: file
/etc/ld.so.conf.d/00-gpuctk-compat.conf as fifo (enable-cuda-compat): ok; changed: ./etc/ld.so.conf.d/00-gpuctk-compat.conf; now: file
/etc/ld.so.conf.d/00-gpuctk-compat.conf as socket (enable-cuda-compat): ok; changed: ./etc/ld.so.conf.d/00-gpuctk-compat.conf; now: file
/usr/local/cuda/compat/libcuda.so.575.57.08 as char device (enable-cuda-compat): ok; changed: nothing; now: other
/usr/local/cuda/compat/libcuda.so.575.57.08 as fifo (enable-cuda-compat): ok; changed: nothing; now: other
/usr/local/cuda/compat/libcuda.so.575.57.08 as socket (enable-cuda-compat): ok; changed: nothing; now: other
/etc/ld-musl-x86_64.path as char device (update-ldcache): gpuctk: error: update-ldcache: /etc/ld-musl-x86_64.path in container root <root>: not a regular file; changed: nothing; now: other
/etc/ld-musl-x86_64.path as fifo (update-ldcache): gpuctk: error: update-ldcache: /etc/ld-musl-x86_64.path in container root <root>: not a regular file; changed: nothing; now: other
/etc/ld-musl-x86_64.path as socket (update-ldcache): gpuctk: error: update-ldcache: /etc/ld-musl-x86_64.path in container root <root>: not a regular file; changed: nothing; now: other
/usr/lib/x86_64-linux-gnu/libnode.so.1 as char device (update-ldcache): ok; changed: ./etc/ld-musl-x86_64.path; now: other
/usr/lib/x86_64-linux-gnu/libnode.so.1 as fifo (update-ldcache): ok; changed: ./etc/ld-musl-x86_64.path; now: other
/usr/lib/x86_64-linux-gnu/libnode.so.1 as socket (update-ldcache): ok; changed: ./etc/ld-musl-x86_64.path; now: other
/usr/lib/x86_64-linux-gnu/libcuda.so as char device (create-symlinks): ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so; now: link
/usr/lib/x86_64-linux-gnu/libcuda.so as fifo (create-symlinks): ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so; now: link
/usr/lib/x86_64-linux-gnu/libcuda.so as socket (create-symlinks): ok; changed: ./usr/lib/x86_64-linux-gnu/libcuda.so; now: link
/dev/nvidia0 as char device (chmod): ok; changed: ./dev/nvidia0; now: other
/dev/nvidia0 as fifo (chmod): ok; changed: ./dev/nvidia0; now: other
/dev/nvidia0 as socket (chmod): ok; changed: ./dev/nvidia0; now: other
/proc/driver/nvidia/params as char device (disable-device-node-modification): ok; changed: nothing; now: other
/proc/driver/nvidia/params as fifo (disable-device-node-modification): ok; changed: nothing; now: other
/proc/driver/nvidia/params as socket (disable-device-node-modification): ok; changed: nothing; now: other
)x");
}

// The most links one path may expand (the kernel's MAXSYMLINKS).
constexpr int k_link_limit = 40;

// A chain of k_link_limit links in `root`: /s -> <pad>l1 -> <pad>l2 -> ... -> <pad>l39 -> <pad>d, with
// <pad> "x/../" repeated to about 4 KiB. Resolving /s expands 40 links of 4 KiB each and ends in /d;
// anything after it in the same path that is a link is one too many.
void make_link_chain(const std::string& root) {
  make_host_dirs(root + "/x");
  make_host_dirs(root + "/d");
  std::string pad;
  while (pad.size() < 4000) {
    pad += "x/../";
  }
  std::string next = "d";
  for (int i = k_link_limit - 1; i >= 1; --i) {
    make_host_link(pad + next, root + "/l" + std::to_string(i));
    next = "l" + std::to_string(i);
  }
  make_host_link(pad + next, root + "/s");
}

// "/s/.." `times` times: a line of the image's linker configuration.
std::string dotdot_line(int times) {
  std::string line;
  for (int i = 0; i < times; ++i) {
    line += "/s/..";
  }
  return line;
}

// Denial of service through the image's linker configuration (issue 33): a path is ONE resolution, as
// for the kernel and for ldconfig in its sandbox, with 40 links in all, however many ".." it has. A
// line "/s/../s/../opt/driver" needs 80 links: ldconfig cannot open it (ELOOP), so the image does not
// configure /opt/driver and the drop-in names it; "/s/../opt/other" needs 40 and is /opt/other, which
// the image configures. (Resolving each ".." on its own, as gpuctk did, counted 40 links per "..": it
// found /opt/driver configured, left it out of the drop-in, and spent 40 links of 4 KiB per "..".)
TEST_P(HostileImageTest, UpdateLdcacheCountsTheLinksOfAWholePathAsTheKernelDoes) {
  SKIP_WITHOUT_LDCONFIG();
  const std::string root = m_image.m_root;
  std::string report;
  for (const bool cli : {false, true}) {
    m_image.reset_root();
    make_link_chain(root);
    make_host_dirs(root + "/opt/driver");
    make_host_dirs(root + "/opt/other");
    write_host_file(root + "/etc/ld.so.conf", "/s/../s/../opt/driver\n/s/../opt/other\n");
    const std::string before_outside = m_image.outside();
    std::string outcome;
    if (cli) {
      outcome =
          hook_outcome(m_image.hook({"update-ldcache", "--folder", "/opt/driver", "--folder", "/opt/other"}));
    } else {
      auto ldconfig = seal_host_program("/sbin/ldconfig");
      ASSERT_TRUE(ldconfig) << ldconfig.error().message;
      outcome = lib_outcome(ldcache::update_ld_cache(this->root(), {"/opt/driver", "/opt/other"}, *ldconfig));
    }
    EXPECT_EQ(m_image.outside(), before_outside);
    report += std::string(cli ? "cli" : "lib") + ": " + outcome +
              "; drop-in: " + quote(read_file(root + ldcache::k_ld_conf_dropin).value_or("<none>")) + "\n";
  }
  EXPECT_EQ(m_image.normalise(report), R"x(lib: ok; drop-in: "/opt/driver\n"
cli: ok; drop-in: "/opt/driver\n"
)x");
}

// The same chain under a configuration of 8 files of 16 lines of "/s/.." 816 times (4 KiB lines: the
// kernel's PATH_MAX): resolving each ".." on its own cost 816 x 40 link expansions of 4 KiB per line,
// minutes for this root and hours for the 16 MiB the configuration may hold. Now each distinct path is
// one resolution, so the work counted by the start's ImageBudget stays linear in the input: a few
// dozen resolutions for the configuration, its parse twice and the merge, and (the portable walk) one
// expansion of the chain per distinct line. The merge over that configuration is proven or not as
// before; the counts, not the wall time, are checked.
TEST_P(HostileImageTest, AHostileLinkerConfigurationIsReadInLinearWork) {
  SKIP_WITHOUT_LDCONFIG();
  const auto libz = read_file("/lib/x86_64-linux-gnu/libz.so.1");
  if (!libz) {
    GTEST_SKIP() << "no /lib/x86_64-linux-gnu/libz.so.1 on this host to use as the driver's library";
  }
  const std::string root = m_image.m_root;
  make_link_chain(root);
  write_host_file(root + "/opt/driver/libz.so.1", *libz, 0755);
  write_host_file(root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  std::string file;
  for (int line = 0; line < 16; ++line) {
    file += dotdot_line(816) + "\n";
  }
  ASSERT_LT(dotdot_line(816).size(), size_t{4096});
  for (int i = 1; i <= 8; ++i) {
    write_host_file(root + "/etc/ld.so.conf.d/" + std::to_string(i) + ".conf", file);
  }
  const std::string before_outside = m_image.outside();
  // The CLI, with ldconfig: it ends, with the driver's folder in the drop-in (no line leads anywhere).
  EXPECT_EQ(hook_outcome(m_image.hook({"update-ldcache", "--folder", "/opt/driver"})), "ok");
  EXPECT_EQ(read_file(root + ldcache::k_ld_conf_dropin).value_or("<none>"), "/opt/driver\n");
  // The library with the merge, on the cache that run wrote: what the parse and the merge spent.
  auto facts = ldcache::parse_ld_cache_facts({"0x303:0x0:libz.so.1:/opt/driver/libz.so.1"});
  ASSERT_TRUE(facts) << facts.error().message;
  std::string merged = "not run";
  std::array<size_t, 2> resolutions{};
  std::array<size_t, 2> components{};
  const auto writer = [&](const Root& r, const ldcache::LdScan& scan, ImageBudget& budget) -> Result<bool> {
    resolutions[0] = budget.spent(ImageWork::resolutions);
    components[0] = budget.spent(ImageWork::components);
    GPUCTK_TRY_ASSIGN(const auto outcome, ldcache::merge_ld_cache(r, scan, *facts, budget));
    resolutions[1] = budget.spent(ImageWork::resolutions);
    components[1] = budget.spent(ImageWork::components);
    merged = outcome.merged ? "merged, " + std::to_string(outcome.added) + " added" : outcome.reason;
    return outcome.merged;
  };
  auto r = ldcache::update_ld_cache_with(this->root(), {"/opt/driver"}, writer,
                                         [] { return seal_host_program("/sbin/ldconfig"); });
  EXPECT_TRUE(r) << r.error().message;
  EXPECT_EQ(merged, "merged, 0 added");
  EXPECT_EQ(m_image.outside(), before_outside);
  // The configuration: 10 files read twice and one glob each time, the one distinct line and the folder
  // (before: 128 x 816 resolutions). The merge: the files' dates, the folders, the fact.
  EXPECT_LE(resolutions[0], 32U);
  EXPECT_LE(resolutions[1] - resolutions[0], 48U);
  // A line is 1633 components; the walk also expands the chain once per resolution of the line (40
  // links of about 1600 components). Before: 816 x 40 x 1600 per line, 6.8e9 in all. The automatic
  // resolver walks too when openat2 keeps answering EAGAIN to the line's ".." (mounts elsewhere on the
  // node, as the e2e tests beside this one make), so the walk's bound holds for both.
  const size_t chain = k_link_limit * 1700;
  EXPECT_LE(components[0], 2 * 1700 + chain + 1000);
  EXPECT_LE(components[1] - components[0], 2 * 1700 + chain + 1000);
}

}  // namespace
}  // namespace gpuctk::rootfs
