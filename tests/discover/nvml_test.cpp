// discover::Nvml's events and topology (the device plugin's), through the mock libnvidia-ml.so.1 laid out
// in a temporary directory with its nvml-mock.conf and events FIFO (fixtures/mock_nvml/mock_nvml.h).
#include "discover/nvml.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "discover/nvml_abi.h"
#include "fixtures/builder/materialise.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::discover {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t k_xid = nvmlEventTypeXidCriticalError;
constexpr const char* k_gpu0 = "GPU-00000000-1111-2222-3333-444444444444";
constexpr const char* k_gpu1 = "GPU-11111111-1111-2222-3333-444444444444";
constexpr const char* k_mig = "MIG-22222222-1111-2222-3333-444444444444";

// Three A100s on two PCIe switches; GPU 1 in MIG mode with one 3g.20gb device (gi 2, ci 0).
std::string host_conf() {
  std::string text = "driver\tversion=550.54.15\tcuda=12040\n";
  const char* uuids[] = {k_gpu0, k_gpu1, "GPU-22222222-1111-2222-3333-444444444444"};
  const char* buses[] = {"00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0"};
  for (int i = 0; i < 3; ++i) {
    text += "gpu\tindex=" + std::to_string(i) + "\tuuid=" + uuids[i] +
            "\tname=NVIDIA A100-SXM4-40GB\tminor=" + std::to_string(i) + "\tbus_id=" + buses[i] +
            "\tpci_device_id=0x20B010DE\tpci_subsystem_id=0x134F10DE\tmemory_total=42949672960\tcc_major=8"
            "\tcc_minor=0\tbrand=Tesla\tarch=ampere\tmig_mode=" +
            (i == 1 ? "1" : "0") + "\tmax_mig=7\n";
  }
  return text + "mig\tparent=1\tindex=0\tuuid=" + k_mig +
         "\tgi=2\tci=0\tprofile=3g.20gb\tmemory_total=21474836480\n";
}

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("GPUCTK_MOCK_NVML_CONFIG");
    ::unsetenv("GPUCTK_MOCK_NVML_EVENTS");
    ASSERT_FALSE(m_tmp.path().empty());
    m_dir = m_tmp.path();
    fs::copy_file(GPUCTK_MOCK_NVML_PATH, m_dir / "libnvidia-ml.so.550.54.15");
    fs::create_symlink("libnvidia-ml.so.550.54.15", m_dir / "libnvidia-ml.so.1");
  }

  void write_conf(const std::string& text) const { std::ofstream(m_dir / "nvml-mock.conf") << text; }
  std::string library() const { return (m_dir / "libnvidia-ml.so.1").string(); }
  // The report of the library as it is laid out now, from a session of its own.
  [[nodiscard]] Result<NvmlReport> report_of_library() const {
    GPUCTK_TRY_ASSIGN(auto nvml, Nvml::open(library()));
    return nvml.report();
  }
  // The mock library, as an older one that lacks `symbols` (call with ASSERT_NO_FATAL_FAILURE).
  void install_library_without(const std::vector<std::string>& symbols) const {
    auto hidden = fixture::hide_mock_nvml_symbols(read_file(GPUCTK_MOCK_NVML_PATH).value(), symbols);
    ASSERT_TRUE(hidden) << hidden.error().message;
    fs::remove(m_dir / "libnvidia-ml.so.550.54.15");
    std::ofstream(m_dir / "libnvidia-ml.so.550.54.15", std::ios::binary) << *hidden;
  }
  void make_fifo() const { ASSERT_EQ(::mkfifo((m_dir / "nvml-events").c_str(), 0600), 0); }
  void inject(const std::string& lines) const {
    const int fd = ::open((m_dir / "nvml-events").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(::write(fd, lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
    ::close(fd);
  }

  test::TempDir m_tmp{"gpuctk-nvml"};
  fs::path m_dir;
};

// An RTX PRO 6000 Blackwell in MIG mode (four 1-slice GPU instances of 24 GB): GI 3 has the
// graphics-capable 1g.24gb+gfx profile, GI 4 the plain 1g.24gb.
std::string graphics_host_conf() {
  return "driver\tversion=580.82.07\tcuda=13000\n"
         "gpu\tindex=0\tuuid=" +
         std::string(k_gpu0) +
         "\tname=NVIDIA RTX PRO 6000 Blackwell Server Edition\tminor=0\tbus_id=00000000:17:00.0"
         "\tpci_device_id=0x2BB510DE\tpci_subsystem_id=0x204E10DE\tmemory_total=102641958912\tcc_major=12"
         "\tcc_minor=0\tbrand=NvidiaRTX\tarch=blackwell\tmig_mode=1\tmax_mig=4\n"
         "mig\tparent=0\tindex=0\tuuid=" +
         k_mig +
         "\tgi=3\tci=0\tprofile=1g.24gb+gfx\tmemory_total=25232932864\n"
         "mig\tparent=0\tindex=1\tuuid=MIG-33333333-1111-2222-3333-444444444444\tgi=4\tci=0"
         "\tprofile=1g.24gb\tmemory_total=25232932864\n";
}

TEST_F(NvmlTest, ReportMarksMigDevicesOfGraphicsCapableProfilesAndNamesThemGfx) {
  write_conf(graphics_host_conf());
  const auto report = report_of_library();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->warnings.empty());
  ASSERT_EQ(report->gpus.size(), 1u);
  ASSERT_EQ(report->gpus[0].migs.size(), 2u);
  EXPECT_TRUE(report->gpus[0].migs[0].graphics);
  EXPECT_EQ(report->gpus[0].migs[0].profile, "1g.24gb+gfx");
  EXPECT_FALSE(report->gpus[0].migs[1].graphics);
  EXPECT_EQ(report->gpus[0].migs[1].profile, "1g.24gb");
}

TEST_F(NvmlTest, ReportOfAnA100LayoutHasNoGraphicsCapableMigDevice) {
  write_conf(host_conf());
  const auto report = report_of_library();
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->gpus.at(1).migs.size(), 1u);
  EXPECT_FALSE(report->gpus[1].migs[0].graphics);
  EXPECT_EQ(report->gpus[1].migs[0].profile, "3g.20gb");
}

// An older library without the GPU instance calls: no MIG device is graphics capable, and the library's
// one warning says what is unknown.
TEST_F(NvmlTest, ReportOfALibraryWithoutGpuInstanceCallsHasNoGraphicsCapableMigDevice) {
  write_conf(graphics_host_conf());
  ASSERT_NO_FATAL_FAILURE(
      install_library_without({"nvmlDeviceGetGpuInstanceById", "nvmlGpuInstanceGetInfo"}));
  const auto report = report_of_library();
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->gpus.at(0).migs.size(), 2u);
  EXPECT_FALSE(report->gpus[0].migs[0].graphics);
  EXPECT_EQ(report->gpus[0].migs[0].profile, "1g.24gb");
  EXPECT_EQ(report->warnings,
            std::vector<std::string>{"nvml: " + library() +
                                     " lacks nvmlDeviceGetGpuInstanceById, nvmlGpuInstanceGetInfo (an older "
                                     "driver?); unknown: graphics-capable MIG devices"});
}

// NVML refusing the GPU instance calls (an unprivileged caller may be refused): no MIG device is graphics
// capable, and the two refused MIG devices make one warning.
TEST_F(NvmlTest, ReportWhenNvmlRefusesGpuInstancesHasNoGraphicsCapableMigDeviceAndOneWarning) {
  write_conf(graphics_host_conf() + "fail\tgpu_instance=NVML_ERROR_NO_PERMISSION\n");
  const auto report = report_of_library();
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->gpus.at(0).migs.size(), 2u);
  EXPECT_FALSE(report->gpus[0].migs[0].graphics);
  EXPECT_EQ(report->gpus[0].migs[0].profile, "1g.24gb");
  EXPECT_EQ(report->warnings,
            std::vector<std::string>{"nvml: nvmlDeviceGetGpuInstanceById: Insufficient Permissions: "
                                     "graphics-capable MIG devices are taken as not graphics capable"});
}

// Brand and architecture by go-nvlib's names, which differ from the mock file's ("ada", "NvidiaRTX").
TEST_F(NvmlTest, ReportNamesBrandAndArchitectureAsGoNvlib) {
  write_conf(graphics_host_conf() + "gpu\tindex=1\tuuid=" + k_gpu1 +
             "\tname=NVIDIA L4\tminor=1\tbus_id=00000000:18:00.0\tpci_device_id=0x27B810DE"
             "\tpci_subsystem_id=0x16CA10DE\tmemory_total=24152899584\tcc_major=8\tcc_minor=9"
             "\tbrand=Nvidia\tarch=ada\tmig_mode=0\tmax_mig=0\n");
  const auto report = report_of_library();
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->gpus.size(), 2u);
  EXPECT_EQ(report->gpus[0].brand, "NvidiaRTX");
  EXPECT_EQ(report->gpus[0].architecture, "Blackwell");
  EXPECT_EQ(report->gpus[1].brand, "Nvidia");
  EXPECT_EQ(report->gpus[1].architecture, "Ada Lovelace");
}

TEST_F(NvmlTest, ReportOfALibraryWithoutBrandAndArchitectureLeavesThemUnknown) {
  write_conf(host_conf());
  ASSERT_NO_FATAL_FAILURE(install_library_without({"nvmlDeviceGetBrand", "nvmlDeviceGetArchitecture"}));
  const auto report = report_of_library();
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_EQ(report->gpus.size(), 3u);
  EXPECT_EQ(report->gpus[0].brand, std::nullopt);
  EXPECT_EQ(report->gpus[0].architecture, std::nullopt);
  EXPECT_EQ(report->warnings,
            std::vector<std::string>{"nvml: " + library() +
                                     " lacks nvmlDeviceGetBrand, nvmlDeviceGetArchitecture (an older "
                                     "driver?); unknown: the GPU brand, the GPU architecture"});
}

TEST_F(NvmlTest, TopologyReadsEveryPairsPcieLevelAndCountsNvLinksByRemoteBusId) {
  write_conf(host_conf() + "link\tgpu=0\tpeer=1\tlevel=single\nlink\tgpu=0\tpeer=2\tlevel=node\n" +
             "link\tgpu=1\tpeer=2\tlevel=internal\nnvlink\tgpu=0\tpeer=1\tlinks=4\nnvlink\tgpu=2\tpeer="
             "1\tlinks=1\n");
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto topology = nvml->topology();
  ASSERT_TRUE(topology) << topology.error().message;
  using enum PciePath;
  const std::vector<std::vector<GpuLink>> expected = {
      {{}, {single_switch, 4}, {same_cpu, 0}},
      {{single_switch, 4}, {}, {same_board, 1}},
      {{same_cpu, 0}, {same_board, 1}, {}},
  };
  EXPECT_EQ(topology->links, expected);
  EXPECT_TRUE(topology->warnings.empty());
}

TEST_F(NvmlTest, TopologyWithoutNvmlSupportIsUnknownLinksAndOneWarning) {
  write_conf(host_conf());
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto topology = nvml->topology();
  ASSERT_TRUE(topology) << topology.error().message;
  EXPECT_EQ(topology->links, std::vector<std::vector<GpuLink>>(3, std::vector<GpuLink>(3)));
  EXPECT_EQ(topology->warnings,
            std::vector<std::string>{"nvml: nvmlDeviceGetTopologyCommonAncestor: Not Supported: "
                                     "the GPUs' PCIe paths are unknown"});
}

TEST_F(NvmlTest, TopologyOfALibraryWithoutTheCallsIsUnknownWithWarnings) {
  write_conf(host_conf());
  ASSERT_NO_FATAL_FAILURE(install_library_without(
      {"nvmlDeviceGetTopologyCommonAncestor", "nvmlDeviceGetNvLinkState", "nvmlEventSetWait_v2"}));
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  // The report never mentions what only the device plugin needs.
  auto report = nvml->report();
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_TRUE(report->warnings.empty());
  auto topology = nvml->topology();
  ASSERT_TRUE(topology) << topology.error().message;
  EXPECT_EQ(topology->warnings,
            (std::vector<std::string>{
                "nvml: " + library() +
                    " lacks nvmlDeviceGetTopologyCommonAncestor: the GPUs' PCIe paths are unknown",
                "nvml: " + library() +
                    " lacks nvmlDeviceGetNvLinkState or nvmlDeviceGetNvLinkRemotePciInfo_v2: NVLinks are "
                    "unknown"}));
  auto events = nvml->events();
  ASSERT_FALSE(events);
  EXPECT_EQ(events.error().message,
            "nvml: " + library() + " lacks nvmlEventSetWait_v2 (health checks need them)");
}

TEST_F(NvmlTest, EventsDeliverXidsOfRegisteredGpusWithTheirMigInstance) {
  write_conf(host_conf());
  make_fifo();
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto events = nvml->events();
  ASSERT_TRUE(events) << events.error().message;
  const auto added = [&](const char* uuid, uint64_t types) {
    auto result = events->add(uuid, types);
    EXPECT_TRUE(result) << result.error().message;
    return result.value_or(false);
  };
  EXPECT_TRUE(added(k_gpu0, k_xid | 0x4 /* PState: unsupported, masked */));
  EXPECT_TRUE(added(k_gpu1, k_xid));
  EXPECT_FALSE(added(k_gpu1, 0x4));  // nothing it supports
  auto missing = events->add("GPU-99999999-1111-2222-3333-444444444444", k_xid);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "nvml: GPU-99999999-1111-2222-3333-444444444444: nvmlDeviceGetHandleByUUID: Not Found");

  inject(std::string("xid\tuuid=") + k_gpu0 + "\txid=79\nxid\tuuid=" + k_mig + "\txid=94\n");
  auto first = events->wait(std::chrono::seconds(5));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first,
            (NvmlEvent{.uuid = k_gpu0, .type = k_xid, .data = 79, .gi = std::nullopt, .ci = std::nullopt}));
  auto second = events->wait(std::chrono::seconds(5));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(*second, (NvmlEvent{.uuid = k_gpu1, .type = k_xid, .data = 94, .gi = 2, .ci = 0}));
  auto none = events->wait(std::chrono::milliseconds(20));
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_EQ(*none, std::nullopt);

  inject("error\tcode=NVML_ERROR_GPU_IS_LOST\n");
  auto lost = events->wait(std::chrono::seconds(5));
  ASSERT_FALSE(lost);
  EXPECT_EQ(lost.error().message, "nvml: nvmlEventSetWait_v2: GPU is lost");
}

// gpuctk-mps-control-daemon's compute modes: set, read back, recorded by the mock beside its data file
// (what the end-to-end test reads), kept across sessions as the driver keeps them.
TEST_F(NvmlTest, ComputeModeIsSetReadBackAndKeptAcrossSessions) {
  write_conf(host_conf());
  {
    auto nvml = Nvml::open(library());
    ASSERT_TRUE(nvml) << nvml.error().message;
    EXPECT_EQ(nvml->compute_mode(2).value_or(99), 0u);
    ASSERT_TRUE(nvml->set_compute_mode(2, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS));
    EXPECT_EQ(nvml->compute_mode(2).value_or(99), 3u);
    EXPECT_EQ(nvml->compute_mode(0).value_or(99), 0u);
    const auto retired = nvml->set_compute_mode(0, NVML_COMPUTEMODE_EXCLUSIVE_THREAD);
    ASSERT_FALSE(retired);
    EXPECT_EQ(retired.error().message, "nvml: GPU 0: nvmlDeviceSetComputeMode: Invalid Argument");
    const auto missing = nvml->compute_mode(7);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message, "nvml: GPU 7: nvmlDeviceGetHandleByIndex_v2: Invalid Argument");
  }
  EXPECT_EQ(read_file((m_dir / "nvml-compute-mode").string()).value_or(""),
            "gpu=0 mode=0\ngpu=1 mode=0\ngpu=2 mode=3\n");
  auto again = Nvml::open(library());
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->compute_mode(2).value_or(99), 3u);
}

TEST_F(NvmlTest, ComputeModeOfALibraryWithoutTheCallsIsAnError) {
  write_conf(host_conf());
  ASSERT_NO_FATAL_FAILURE(install_library_without({"nvmlDeviceGetComputeMode", "nvmlDeviceSetComputeMode"}));
  auto nvml = Nvml::open(library());
  ASSERT_TRUE(nvml) << nvml.error().message;
  EXPECT_EQ(nvml->compute_mode(0).error().message, "nvml: " + library() + " lacks nvmlDeviceGetComputeMode");
  EXPECT_EQ(nvml->set_compute_mode(0, NVML_COMPUTEMODE_DEFAULT).error().message,
            "nvml: " + library() + " lacks nvmlDeviceSetComputeMode");
}

}  // namespace
}  // namespace gpuctk::discover
