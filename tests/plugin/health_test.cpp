// Device health: NVIDIA's Xid skip list and its two variables, which devices an event marks, the board
// the ListAndWatch streams wait on, and the watch itself on the mock NVML's events FIFO.
#include "plugin/health.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "discover/nvml_abi.h"
#include "support/temp_dir.hpp"
#include "test_host.hpp"

namespace gpuctk::plugin {
namespace {

using namespace test;

constexpr uint64_t k_xid = nvmlEventTypeXidCriticalError;

discover::NvmlEvent xid(const std::string& uuid, uint64_t number, std::optional<uint32_t> gi = std::nullopt,
                        std::optional<uint32_t> ci = std::nullopt) {
  return {.uuid = uuid, .type = k_xid, .data = number, .gi = gi, .ci = ci};
}

XidPolicy policy(std::string_view disable = "", std::string_view enable = "") {
  std::vector<std::string> notes;
  auto p = XidPolicy::from(disable, enable, notes);
  EXPECT_TRUE(notes.empty());
  return p;
}

std::vector<Resource> resources(labels::MigStrategy strategy,
                                std::vector<labels::ReplicatedResource> replicated = {}) {
  Config config;
  config.mig_strategy = strategy;
  config.sharing = replicated.empty() ? labels::SharingStrategy::none : labels::SharingStrategy::time_slicing;
  config.replicated = std::move(replicated);
  std::vector<std::string> warnings;
  return build_resources(two_gpus(), config, {}, warnings).value();
}

TEST(PluginHealth, NvidiasSkipListAndTheTwoVariables) {
  const auto plain = policy();
  for (const uint64_t skipped : {13, 31, 43, 45, 68, 109}) {
    EXPECT_TRUE(plain.skipped(skipped)) << skipped;
  }
  for (const uint64_t counted : {48, 62, 63, 64, 74, 79, 92, 94, 95, 119}) {
    EXPECT_FALSE(plain.skipped(counted)) << counted;
  }
  EXPECT_EQ(plain.describe(), "13, 31, 43, 45, 68, 109");
  EXPECT_FALSE(plain.all_disabled());

  const auto more = policy(" 79, 48 ", "13");
  EXPECT_TRUE(more.skipped(79));
  EXPECT_FALSE(more.skipped(13));  // enabled beats the skip list
  EXPECT_EQ(more.describe(), "31, 43, 45, 48, 68, 79, 109");

  EXPECT_TRUE(policy("all").all_disabled());
  EXPECT_TRUE(policy("XIDS").skipped(79));
  const auto only = policy("all", "79");
  EXPECT_FALSE(only.all_disabled());
  EXPECT_FALSE(only.skipped(79));
  EXPECT_TRUE(only.skipped(48));
  const auto every = policy("", "all");
  EXPECT_FALSE(every.skipped(13));
  EXPECT_EQ(every.describe(), "");

  std::vector<std::string> notes;
  const auto odd = XidPolicy::from("79,x9", "", notes);
  EXPECT_TRUE(odd.skipped(79));
  EXPECT_EQ(notes, std::vector<std::string>{"DP_DISABLE_HEALTHCHECKS: ignoring the malformed Xid \"x9\""});
}

TEST(PluginHealth, AnEventMarksEveryDeviceItConcerns) {
  const auto none = resources(labels::MigStrategy::none, {{"nvidia.com/gpu", 2, false}});
  EXPECT_EQ(devices_of_event(none, xid(k_gpu1, 79)),
            (std::vector<std::string>{std::string(k_gpu1) + "::0", std::string(k_gpu1) + "::1"}));
  // A whole GPU advertised as such is hit by an instance's event too.
  EXPECT_EQ(devices_of_event(none, xid(k_gpu1, 79, 1, 0)).size(), 2u);

  const auto mixed = resources(labels::MigStrategy::mixed);
  EXPECT_EQ(devices_of_event(mixed, xid(k_gpu1, 79)), (std::vector<std::string>{k_mig10, k_mig11}));
  EXPECT_EQ(devices_of_event(mixed, xid(k_gpu1, 79, 2, 0)), std::vector<std::string>{k_mig11});
  EXPECT_EQ(devices_of_event(mixed, xid(k_gpu1, 79, 2, std::nullopt)),
            (std::vector<std::string>{k_mig10, k_mig11}));
  EXPECT_TRUE(devices_of_event(mixed, xid("GPU-99999999-0000-4000-8000-000000000000", 79)).empty());
}

TEST(PluginHealth, JudgeSkipsNonXidEventsAndSkippedXids) {
  const auto none = resources(labels::MigStrategy::none);
  const auto p = policy();
  auto verdict = judge_event(none, p, xid(k_gpu0, 79));
  EXPECT_EQ(verdict.unhealthy, std::vector<std::string>{k_gpu0});
  EXPECT_EQ(verdict.note, "Xid 79 on " + std::string(k_gpu0) + ": marking " + k_gpu0 + " unhealthy");
  verdict = judge_event(none, p, xid(k_gpu0, 13));
  EXPECT_TRUE(verdict.unhealthy.empty());
  EXPECT_EQ(verdict.note, "skipped Xid 13 on " + std::string(k_gpu0));
  discover::NvmlEvent ecc = xid(k_gpu0, 0);
  ecc.type = nvmlEventTypeDoubleBitEccError;
  verdict = judge_event(none, p, ecc);
  EXPECT_TRUE(verdict.unhealthy.empty());
  EXPECT_EQ(verdict.note, "skipped a non-Xid event (type 2) on " + std::string(k_gpu0));
  verdict = judge_event(resources(labels::MigStrategy::mixed), p, xid(k_gpu1, 94, 1, 0));
  EXPECT_EQ(verdict.note, "Xid 94 on " + std::string(k_gpu1) +
                              " (GPU instance 1, compute instance 0): marking " + k_mig10 + " unhealthy");
}

TEST(PluginHealth, TheBoardCountsChangesAndWakesItsWaiters) {
  HealthBoard board;
  EXPECT_EQ(board.version(), 0u);
  std::atomic<uint64_t> seen{0};
  std::thread waiter([&] { seen = board.wait_change(0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(board.mark_unhealthy({"a", "b"}), (std::vector<std::string>{"a", "b"}));
  waiter.join();
  EXPECT_EQ(seen.load(), 1u);
  EXPECT_EQ(board.mark_unhealthy({"a"}), std::vector<std::string>{});  // no change, no new version
  EXPECT_EQ(board.version(), 1u);
  EXPECT_FALSE(board.healthy("a"));
  EXPECT_TRUE(board.healthy("c"));
  std::thread stopped([&] { seen = board.wait_change(1); });
  board.stop();
  stopped.join();
  EXPECT_TRUE(board.stopped());
}

// A closing ListAndWatch stream wakes its waiter without a change: the wait returns the same version.
TEST(PluginHealth, AWakeEndsTheWaitWithoutAChange) {
  HealthBoard board;
  std::atomic<bool> returned{false};
  std::atomic<uint64_t> seen{99};
  std::thread waiter([&] {
    seen = board.wait_change(0);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(returned.load());
  while (!returned) {  // a wake before the waiter waits is not its wake: wake until it returns
    board.wake();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  waiter.join();
  EXPECT_EQ(seen.load(), 0u);
  EXPECT_EQ(board.version(), 0u);
  EXPECT_FALSE(board.stopped());
}

// A stream's own flag, set and woken before its handler waits (a server closing while the handler was still
// writing the list, then SIGTERM's Server::Wait() waiting on it forever): the wait reads the flag under
// the board's lock and does not wait at all. Without it the wake was lost (gpuctk-device-plugin hung on
// SIGTERM in the ASan build's plugin.kubelet).
TEST(PluginHealth, AFlagSetAndWokenBeforeTheWaitEndsIt) {
  HealthBoard board;
  std::atomic<bool> closing{false};
  closing = true;
  board.wake();
  auto waiter =
      std::async(std::launch::async, [&] { return board.wait_change(0, [&] { return closing.load(); }); });
  const bool ended = waiter.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!ended) {
    board.stop();  // releases the waiter, so that the test ends
  }
  EXPECT_TRUE(ended) << "wait_change waited although its flag was set before it began";
  EXPECT_EQ(waiter.get(), 0u);
  EXPECT_EQ(board.version(), 0u);
}

// The watch on the mock NVML: GPU 1's Xid marks its MIG device, a skipped Xid marks nothing, a lost NVML
// marks everything and ends the watch.
class PluginHealthWatch : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("GPUCTK_MOCK_NVML_CONFIG");
    ::unsetenv("GPUCTK_MOCK_NVML_EVENTS");
    ASSERT_FALSE(m_tmp.path().empty());
    m_dir = m_tmp.path();
    std::filesystem::copy_file(GPUCTK_MOCK_NVML_PATH, m_dir / "libnvidia-ml.so.1");
    std::string conf = "driver\tversion=550.54.15\tcuda=12040\n";
    const std::pair<const char*, const char*> gpus[] = {{k_gpu0, "00000000:07:00.0"},
                                                        {k_gpu1, "00000000:0F:00.0"}};
    for (int i = 0; i < 2; ++i) {
      conf +=
          "gpu\tindex=" + std::to_string(i) + "\tuuid=" + gpus[i].first +
          "\tname=A100\tminor=" + std::to_string(i) + "\tbus_id=" + gpus[i].second +
          "\tpci_device_id=0x20B010DE\tpci_subsystem_id=0x134F10DE\tmemory_total=1\tcc_major=8\tcc_minor=0"
          "\tbrand=Tesla\tarch=ampere\tmig_mode=" +
          (i == 1 ? "1" : "0") + "\tmax_mig=7\n";
    }
    conf += std::string("mig\tparent=1\tindex=0\tuuid=") + k_mig10 +
            "\tgi=1\tci=0\tprofile=3g.20gb\tmemory_total=1\n";
    conf += std::string("mig\tparent=1\tindex=1\tuuid=") + k_mig11 +
            "\tgi=2\tci=0\tprofile=3g.20gb\tmemory_total=1\n";
    std::ofstream(m_dir / "nvml-mock.conf") << conf;
    ASSERT_EQ(::mkfifo((m_dir / "nvml-events").c_str(), 0600), 0);
  }

  void inject(const std::string& line) const {
    const int fd = ::open((m_dir / "nvml-events").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    ::close(fd);
  }

  gpuctk::test::TempDir m_tmp{"gpuctk-health"};
  std::filesystem::path m_dir;
};

TEST_F(PluginHealthWatch, XidEventsMarkDevicesAndALostNvmlMarksEverything) {
  auto nvml = discover::Nvml::open((m_dir / "libnvidia-ml.so.1").string());
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto events = nvml->events();
  ASSERT_TRUE(events) << events.error().message;
  const auto mixed = resources(labels::MigStrategy::mixed);
  HealthBoard board;
  std::mutex mutex;
  std::vector<std::string> log;
  std::thread watcher([&] {
    watch_health(*events, mixed, policy(), board, std::chrono::milliseconds(50),
                 [&](const std::string& line) {
                   const std::lock_guard lock(mutex);
                   log.push_back(line);
                 });
  });
  inject(std::string("xid\tuuid=") + k_mig11 + "\txid=43\n");  // skipped
  inject(std::string("xid\tuuid=") + k_mig11 + "\txid=79\n");
  EXPECT_EQ(board.wait_change(0), 1u);
  EXPECT_FALSE(board.healthy(k_mig11));
  EXPECT_TRUE(board.healthy(k_mig10));
  EXPECT_TRUE(board.healthy(k_gpu0));
  inject("error\tcode=NVML_ERROR_GPU_IS_LOST\n");
  watcher.join();  // the watch ends by itself
  EXPECT_FALSE(board.healthy(k_gpu0));
  EXPECT_FALSE(board.healthy(k_mig10));
  const std::vector<std::string> expected = {
      "health: skipped Xid 43 on " + std::string(k_gpu1) + " (GPU instance 2, compute instance 0)",
      "health: Xid 79 on " + std::string(k_gpu1) + " (GPU instance 2, compute instance 0): marking " +
          k_mig11 + " unhealthy",
      "health: nvml: nvmlEventSetWait_v2: GPU is lost: marking every device unhealthy (" +
          std::string(k_gpu0) + ", " + k_mig10 + "); health checks end"};
  EXPECT_EQ(log, expected);
}

TEST_F(PluginHealthWatch, AStopEndsTheWatchWithinOnePoll) {
  auto nvml = discover::Nvml::open((m_dir / "libnvidia-ml.so.1").string());
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto events = nvml->events();
  ASSERT_TRUE(events);
  const auto none = resources(labels::MigStrategy::none);
  HealthBoard board;
  std::thread watcher(
      [&] { watch_health(*events, none, policy(), board, std::chrono::milliseconds(50), [](auto&) {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto before = std::chrono::steady_clock::now();
  board.stop();
  watcher.join();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(500));
  EXPECT_TRUE(board.healthy(k_gpu0));
}

// The daemon stops the watch alone to discover again (the NVML session must close): its own flag ends it,
// and the board, which the streams still read, is not stopped.
TEST_F(PluginHealthWatch, ItsOwnStopFlagEndsTheWatchAndLeavesTheBoardRunning) {
  auto nvml = discover::Nvml::open((m_dir / "libnvidia-ml.so.1").string());
  ASSERT_TRUE(nvml) << nvml.error().message;
  auto events = nvml->events();
  ASSERT_TRUE(events);
  const auto none = resources(labels::MigStrategy::none);
  HealthBoard board;
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    watch_health(
        *events, none, policy(), board, std::chrono::milliseconds(50), [](auto&) {},
        [&] { return stop.load(); });
  });
  stop = true;
  watcher.join();
  EXPECT_FALSE(board.stopped());
}

// A stream whose `done` turns true without a wake (the kubelet cancelled it) sees it at the timeout.
TEST(PluginHealth, AWaitWithATimeoutLooksAtItsFlagAgainWithoutAWake) {
  HealthBoard board;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> looked{false};
  auto waiter = std::async(std::launch::async, [&] {
    return board.wait_change(
        0,
        [&] {
          looked = true;
          return cancelled.load();
        },
        std::chrono::milliseconds(10));
  });
  while (!looked) {
    std::this_thread::yield();
  }
  cancelled = true;  // after the wait looked at it, and no wake(): only the timeout lets the waiter see it
  const bool ended = waiter.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!ended) {
    board.stop();
  }
  ASSERT_TRUE(ended) << "the wait never looked at its flag again";
  EXPECT_EQ(waiter.get(), 0u);
}

}  // namespace
}  // namespace gpuctk::plugin
