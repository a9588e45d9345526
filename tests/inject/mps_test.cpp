// The MPS directories at injection (inject/mps.hpp, security rule 9): a path config.json already mounts is
// left alone; otherwise only a root-owned leaf directory strictly below a configured root, reached without
// a symlink, is mounted from the host.
#include "inject/mps.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "inject/inject_fixture.hpp"
#include "util/file.hpp"

namespace gpuctk::inject {
namespace {

// Which mount of config.json covers a path: destinations compared cleaned, a parent directory (or "/")
// covers what is below it, a sibling sharing a prefix does not; malformed mounts are passed over.
TEST(MpsMountedAtOrAbove, CleanedDestinationsAtOrAboveThePath) {
  const auto config = ordered_json::parse(
      R"({"mounts": [{"destination": 5}, "x", {"source": "/a"}, {"destination": "/mps//nvidia.com/"}]})");
  EXPECT_EQ(mounted_at_or_above(config, "/mps/nvidia.com/gpu/pipe"), "/mps/nvidia.com");
  EXPECT_EQ(mounted_at_or_above(config, "/mps/nvidia.com"), "/mps/nvidia.com");
  EXPECT_EQ(mounted_at_or_above(config, "/mps/nvidia.co"), std::nullopt);
  EXPECT_EQ(mounted_at_or_above(config, "/mps/nvidia.com-2/pipe"), std::nullopt);
  EXPECT_EQ(mounted_at_or_above(ordered_json::parse(R"({"mounts": [{"destination": "/"}]})"), "/x"), "/");
  EXPECT_EQ(mounted_at_or_above(ordered_json::parse(R"({"mounts": {"destination": "/x"}})"), "/x"),
            std::nullopt);
  EXPECT_EQ(mounted_at_or_above(ordered_json::object(), "/x"), std::nullopt);
}

// ---- MPS -----------------------------------------------------------------------------------------

class InjectMpsTest : public InjectTest {
 protected:
  void SetUp() override {
    InjectTest::SetUp();
    if (IsSkipped()) {
      return;
    }
    install_spec();
    mps_dir("/run/nvidia/mps/nvidia.com/gpu/pipe");
    mps_dir("/run/nvidia/mps/nvidia.com/gpu/log");
  }

  // A directory under dev-root as a root MPS daemon makes it: every component root-owned, mode 0755
  // (the fixture's temporary directory included: nothing depends on the umask), the last one `mode`.
  std::string mps_dir(std::string_view path, mode_t mode = 0755) {
    const std::string host = m_cfg.dev_root + std::string(path);
    std::filesystem::create_directories(host);
    for (std::string p = host; p.size() >= m_fixture->temp.path().size(); p = p.substr(0, p.rfind('/'))) {
      EXPECT_EQ(::chmod(p.c_str(), 0755), 0) << p;
    }
    EXPECT_EQ(::chmod(host.c_str(), mode), 0) << host;
    return host;
  }

  std::string error_for(const std::vector<std::string>& env, const ordered_json& mounts = ordered_json()) {
    auto config = runc_config(env);
    for (const auto& m : mounts) {
      config["mounts"].push_back(m);
    }
    auto result = inject(config);
    return result ? "(no error)" : result.error().message;
  }

  static ordered_json bind(std::string_view source, std::string_view destination) {
    return {{"destination", destination}, {"type", "bind"}, {"source", source}, {"options", {"rbind"}}};
  }
};

std::vector<std::string> sources_at(const ordered_json& config, std::string_view destination) {
  std::vector<std::string> out;
  for (const auto& m : config["mounts"]) {
    if (m["destination"] == destination) {
      out.push_back(m["source"]);
    }
  }
  return out;
}

// The Kubernetes device plugin sets the variable to a path in the container and mounts the host
// directory there itself: gpuctk must neither look the path up on the host nor add a mount.
TEST_F(InjectMpsTest, PathMountedByConfigJsonAtOrAboveIsLeftAlone) {
  auto config = runc_config({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/mps/nvidia.com/gpu/pipe",
                             "CUDA_MPS_LOG_DIRECTORY=/mps/nvidia.com/gpu/log"});
  config["mounts"].push_back(bind("/var/lib/plugin/mps/pipe", "/mps/nvidia.com/gpu/pipe"));
  config["mounts"].push_back(bind("/var/lib/plugin/mps", "/mps//nvidia.com/"));  // a parent, not clean
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(sources_at(config, "/mps/nvidia.com/gpu/pipe"),
            std::vector<std::string>{"/var/lib/plugin/mps/pipe"});
  EXPECT_TRUE(sources_at(config, "/mps/nvidia.com/gpu/log").empty());

  // Below the path, or a sibling with the same prefix, is not at or above it: the host rules apply.
  const std::string outside =
      R"(CUDA_MPS_PIPE_DIRECTORY: "/mps/nvidia.com/gpu/pipe" is not mounted by config.json and is not below an )"
      "MPS root on the host (/run/nvidia/mps; config key mps-pipe-roots)";
  EXPECT_EQ(
      error_for({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/mps/nvidia.com/gpu/pipe"},
                {bind("/x", "/mps/nvidia.com/gpu/pipe/control"), bind("/x", "/mp"), bind("/x", "/mps-2")}),
      outside);
}

TEST_F(InjectMpsTest, LeafDirectoryBelowARootIsMountedFromTheHost) {
  auto config =
      runc_config({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps/nvidia.com/gpu/pipe",
                   "CUDA_MPS_LOG_DIRECTORY=/run/nvidia/mps/nvidia.com/gpu/log"});
  const std::string log_path = m_fixture->temp.path() + "/hook.log";
  m_log = config::Log::open(log_path, config::LogLevel::info).value();
  auto result = inject(config);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(sources_at(config, "/run/nvidia/mps/nvidia.com/gpu/pipe"),
            std::vector<std::string>{m_cfg.dev_root + "/run/nvidia/mps/nvidia.com/gpu/pipe"});
  EXPECT_EQ(sources_at(config, "/run/nvidia/mps/nvidia.com/gpu/log"),
            std::vector<std::string>{m_cfg.dev_root + "/run/nvidia/mps/nvidia.com/gpu/log"});
  EXPECT_NE(
      read_file(log_path).value().find("CUDA_MPS_LOG_DIRECTORY=/run/nvidia/mps/nvidia.com/gpu/log: mounting "
                                       "host directory " +
                                       m_cfg.dev_root),
      std::string::npos);
}

TEST_F(InjectMpsTest, ARootItselfOrADirectoryOfDaemonsIsRefused) {
  EXPECT_EQ(
      error_for({"NVIDIA_VISIBLE_DEVICES=none", "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps"}),
      R"(CUDA_MPS_PIPE_DIRECTORY: "/run/nvidia/mps" is an MPS root itself (/run/nvidia/mps; config key )"
      "mps-pipe-roots): only one daemon's directory below a root is mounted");
  EXPECT_EQ(
      error_for({"NVIDIA_VISIBLE_DEVICES=none", "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps/nvidia.com"}),
      "CUDA_MPS_PIPE_DIRECTORY: host directory " + m_cfg.dev_root +
          "/run/nvidia/mps/nvidia.com has a subdirectory \"gpu\" (refused: only one MPS daemon's directory, "
          "which has none, is mounted)");
  EXPECT_EQ(error_for({"NVIDIA_VISIBLE_DEVICES=none", "CUDA_MPS_LOG_DIRECTORY=/run/nvidia/mps"}),
            R"(CUDA_MPS_LOG_DIRECTORY: "/run/nvidia/mps" is an MPS root itself (/run/nvidia/mps; config key )"
            "mps-log-roots): only one daemon's directory below a root is mounted");
}

TEST_F(InjectMpsTest, OutsideTheRootsIsRefusedAndTmpIsNoLongerARoot) {
  mps_dir("/etc");
  mps_dir("/tmp/nvidia-mps/pipe");
  for (const auto* path : {"/etc", "/tmp/nvidia-mps/pipe", "/run/nvidia/mps-other/pipe"}) {
    EXPECT_EQ(
        error_for({"NVIDIA_VISIBLE_DEVICES=0", std::string("CUDA_MPS_PIPE_DIRECTORY=") + path}),
        std::string("CUDA_MPS_PIPE_DIRECTORY: \"") + path +
            "\" is not mounted by config.json and is not below an MPS root on the host (/run/nvidia/mps; "
            "config key mps-pipe-roots)");
  }
  m_cfg.mps_log_roots.clear();
  EXPECT_EQ(
      error_for({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_LOG_DIRECTORY=/run/nvidia/mps/nvidia.com/gpu/log"}),
      R"(CUDA_MPS_LOG_DIRECTORY: "/run/nvidia/mps/nvidia.com/gpu/log" is not mounted by config.json and is )"
      "not below an MPS root on the host (none configured; config key mps-log-roots)");
}

// A symlink anywhere on the path is refused, even one that leads to a good directory: whoever could
// create it could later point it elsewhere, between the check and the runtime's mount.
TEST_F(InjectMpsTest, SymlinksAreRefusedWhereverTheyLead) {
  std::filesystem::create_symlink("nvidia.com/gpu/pipe", m_cfg.dev_root + "/run/nvidia/mps/alias");
  std::filesystem::create_symlink("/etc", m_cfg.dev_root + "/run/nvidia/mps/escape");
  for (const auto* name : {"alias", "escape"}) {
    EXPECT_EQ(
        error_for(
            {"NVIDIA_VISIBLE_DEVICES=0", std::string("CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps/") + name}),
        "CUDA_MPS_PIPE_DIRECTORY: host path " + m_cfg.dev_root + "/run/nvidia/mps/" + name +
            " is a symbolic link (refused: only a path without links, that nobody but root can change, is "
            "mounted)");
  }
}

TEST_F(InjectMpsTest, EveryDirectoryMustBeRootOwnedAndNotWritableByOthers) {
  const std::vector<std::string> env{"NVIDIA_VISIBLE_DEVICES=0",
                                     "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps/nvidia.com/gpu/pipe"};
  const std::string pipe = m_cfg.dev_root + "/run/nvidia/mps/nvidia.com/gpu/pipe";
  ASSERT_EQ(::chown(pipe.c_str(), 1000, 1000), 0);
  EXPECT_EQ(error_for(env),
            "CUDA_MPS_PIPE_DIRECTORY: host directory " + pipe +
                " is owned by uid 1000, not root (refused: its owner could swap what is mounted)");
  ASSERT_EQ(::chown(pipe.c_str(), 0, 0), 0);

  // From the root down: neither group- nor world-writable, sticky or not.
  for (const auto& [dir, mode] :
       std::vector<std::pair<std::string, std::string>>{{"/run/nvidia/mps/nvidia.com", "0777"},
                                                        {"/run/nvidia/mps", "1777"},
                                                        {"/run/nvidia/mps/nvidia.com/gpu/pipe", "0775"}}) {
    const std::string host = mps_dir(dir, static_cast<mode_t>(std::stoul(mode, nullptr, 8)));
    EXPECT_EQ(error_for(env), "CUDA_MPS_PIPE_DIRECTORY: host directory " + host +
                                  " is writable by group or others " + "(mode " + mode +
                                  "; refused: they could swap what is mounted)");
    mps_dir(dir);
  }
  // Above the root: a directory writable by others only with the sticky bit (as /tmp).
  const std::string run = mps_dir("/run", 0777);
  EXPECT_EQ(error_for(env),
            "CUDA_MPS_PIPE_DIRECTORY: host directory " + run +
                " is writable by group or others (mode 0777; refused: they could swap what is mounted)");
  mps_dir("/run", 01777);
  EXPECT_EQ(error_for(env), "(no error)");
}

TEST_F(InjectMpsTest, MissingHostDirectory) {
  EXPECT_EQ(
      error_for({"NVIDIA_VISIBLE_DEVICES=0", "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia/mps/nvidia.com/gpu2/pipe"}),
      "CUDA_MPS_PIPE_DIRECTORY: host directory " + m_cfg.dev_root +
          "/run/nvidia/mps/nvidia.com/gpu2: No such file or directory (is the MPS control daemon running?)");
}

}  // namespace
}  // namespace gpuctk::inject
