// In-process cost of reading an image's linker configuration as update-ldcache does before ldconfig
// runs (issue 33 item 2): ldcache::configured_library_dirs, then every line it names resolved inside the
// root (rootfs::directory_id), on a Debian-like configuration (arg 0) and on the hostile one of
// tests/rootfs/hostile_image_test.cpp (arg 1: a chain of 40 links of 4 KiB "x/../" targets, 8 files of
// 16 lines of "/s/.." 816 times, each line distinct). Each line is one resolution (40 links at most).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "ldcache/linker_config.hpp"
#include "rootfs/sandbox.hpp"

namespace {

using namespace gpuctk;

void write_text(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

void make_debian_like(const std::string& root) {
  write_text(root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  write_text(root + "/etc/ld.so.conf.d/libc.conf", "# libc default configuration\n/usr/local/lib\n");
  write_text(root + "/etc/ld.so.conf.d/x86_64-linux-gnu.conf",
             "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n"
             "/usr/lib/x86_64-linux-gnu\n");
  std::filesystem::create_directories(root + "/usr/lib/x86_64-linux-gnu");
  std::filesystem::create_directory_symlink("usr/lib", root + "/lib");
}

void make_hostile(const std::string& root) {
  std::filesystem::create_directories(root + "/x");
  std::filesystem::create_directories(root + "/d");
  std::string pad;
  while (pad.size() < 4000) {
    pad += "x/../";
  }
  std::string next = "d";
  for (int i = 39; i >= 1; --i) {
    std::filesystem::create_symlink(pad + next, root + "/l" + std::to_string(i));
    next = "l" + std::to_string(i);
  }
  std::filesystem::create_symlink(pad + next, root + "/s");
  write_text(root + "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n");
  std::string line;
  for (int i = 0; i < 816; ++i) {
    line += "/s/..";
  }
  for (int f = 1; f <= 8; ++f) {
    std::string text;
    for (int l = 1; l <= 16; ++l) {
      text += line.substr(0, 4070) + "/" + std::to_string(f) + "." + std::to_string(l) + "\n";
    }
    write_text(root + "/etc/ld.so.conf.d/" + std::to_string(f) + ".conf", text);
  }
}

void BM_ReadLinkerConfiguration(benchmark::State& state) {
  char dir_template[] = "/tmp/gpuctk-linker-bench.XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) {
    state.SkipWithError("mkdtemp failed");
    return;
  }
  const std::string root_path = std::string(dir_template) + "/rootfs";
  (state.range(0) == 0 ? make_debian_like : make_hostile)(root_path);
  const auto root = rootfs::Root::open(root_path);
  if (!root) {
    state.SkipWithError(root.error().message.c_str());
    return;
  }
  size_t resolutions = 0;
  for (auto _ : state) {
    rootfs::ImageBudget budget(rootfs::k_sandbox_deadline);
    auto dirs = ldcache::configured_library_dirs(*root, "/etc/ld.so.conf", {}, budget);
    if (!dirs) {
      state.SkipWithError(dirs.error().message.c_str());
      break;
    }
    for (const auto& dir : *dirs) {
      benchmark::DoNotOptimize(rootfs::directory_id(*root, dir, budget));
    }
    resolutions = budget.spent(rootfs::ImageWork::resolutions);
  }
  state.counters["resolutions"] = static_cast<double>(resolutions);
  std::filesystem::remove_all(dir_template);
}
BENCHMARK(BM_ReadLinkerConfiguration)->ArgName("hostile")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
