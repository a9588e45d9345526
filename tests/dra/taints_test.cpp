// dra::TaintBoard and devices_of_event: NVIDIA's health taints of the published devices.
#include "dra/taints.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "discover/nvml_abi.h"

namespace gpuctk::dra {
namespace {

using namespace std::chrono_literals;
using discover::NvmlEvent;

constexpr uint64_t k_xid = nvmlEventTypeXidCriticalError;

Device gpu(const std::string& name, const std::string& uuid) {
  Device device;
  device.name = name;
  device.uuid = uuid;
  return device;
}
Device mig(const std::string& name, const std::string& parent, uint32_t gi, uint32_t ci) {
  Device device;
  device.name = name;
  device.uuid = "MIG-" + name;
  device.parent_uuid = parent;
  device.mig = true;
  device.gi = gi;
  device.ci = ci;
  return device;
}

// GPU 0 whole; GPU 1 in MIG mode with two MIG devices.
std::vector<Device> devices() {
  return {gpu("gpu-0", "GPU-0"), mig("gpu-1-mig-a-1-0", "GPU-1", 1, 0),
          mig("gpu-1-mig-b-2-0", "GPU-1", 2, 0)};
}

NvmlEvent xid(const std::string& uuid, uint64_t number, std::optional<uint32_t> gi = std::nullopt,
              std::optional<uint32_t> ci = std::nullopt) {
  return NvmlEvent{.uuid = uuid, .type = k_xid, .data = number, .gi = gi, .ci = ci};
}

plugin::XidPolicy policy(std::string_view disable = "", std::string_view enable = "") {
  std::vector<std::string> notes;
  return plugin::XidPolicy::from(disable, enable, notes);
}

// A clock that reads 2025-06-01T12:00:00Z plus `seconds`.
struct FakeClock {
  std::shared_ptr<std::atomic<int>> seconds = std::make_shared<std::atomic<int>>(0);
  TaintBoard::Clock clock() const {
    return [s = seconds] {
      return std::chrono::system_clock::time_point(1748779200s + std::chrono::seconds(*s));
    };
  }
};

TEST(DraTaints, EventsConcernTheGpuOrTheirMigInstance) {
  const auto all = devices();
  EXPECT_EQ(devices_of_event(all, xid("GPU-0", 79)), std::vector<std::string>{"gpu-0"});
  EXPECT_EQ(devices_of_event(all, xid("GPU-1", 79)),
            (std::vector<std::string>{"gpu-1-mig-a-1-0", "gpu-1-mig-b-2-0"}));
  EXPECT_EQ(devices_of_event(all, xid("GPU-1", 79, 2, 0)), std::vector<std::string>{"gpu-1-mig-b-2-0"});
  EXPECT_EQ(devices_of_event(all, xid("GPU-1", 79, 2, std::nullopt)),
            (std::vector<std::string>{"gpu-1-mig-a-1-0", "gpu-1-mig-b-2-0"}))
      << "without both ids the event is the whole GPU's";
  EXPECT_EQ(devices_of_event(all, xid("GPU-0", 79, 1, 0)), std::vector<std::string>{"gpu-0"})
      << "the GPU published whole";
  EXPECT_TRUE(devices_of_event(all, xid("GPU-9", 79)).empty());
  EXPECT_TRUE(devices_of_event(all, xid("MIG-gpu-1-mig-a-1-0", 79)).empty()) << "events name the GPU";
}

TEST(DraTaints, RfcThreeThreeThreeNineInUtc) {
  EXPECT_EQ(rfc3339(std::chrono::system_clock::time_point(1748779200s)), "2025-06-01T12:00:00Z");
  EXPECT_EQ(rfc3339(std::chrono::system_clock::time_point(0s)), "1970-01-01T00:00:00Z");
}

TEST(DraTaints, ACriticalXidTaintsNoScheduleAndASkippedOneNone) {
  FakeClock clock;
  TaintBoard board(devices(), clock.clock());
  EXPECT_TRUE(board.apply(xid("GPU-1", 79, 1, 0), policy()));
  *clock.seconds = 5;
  EXPECT_TRUE(board.apply(xid("GPU-0", 13), policy()));
  EXPECT_EQ(board.snapshot(),
            (Taints{{"gpu-1-mig-a-1-0", {{"gpu.nvidia.com/xid", "79", "NoSchedule", "2025-06-01T12:00:00Z"}}},
                    {"gpu-0", {{"gpu.nvidia.com/xid", "13", "None", "2025-06-01T12:00:05Z"}}}}));
  EXPECT_EQ(board.version(), 2u);
}

TEST(DraTaints, OneTaintPerKeyANewerXidReplacesTheValue) {
  FakeClock clock;
  TaintBoard board(devices(), clock.clock());
  EXPECT_TRUE(board.apply(xid("GPU-0", 48), policy()));
  *clock.seconds = 10;
  EXPECT_FALSE(board.apply(xid("GPU-0", 48), policy())) << "the same taint again changes nothing";
  EXPECT_EQ(board.snapshot().at("gpu-0").at(0).time_added, "2025-06-01T12:00:00Z") << "set once";
  EXPECT_EQ(board.version(), 1u);
  EXPECT_TRUE(board.apply(xid("GPU-0", 63), policy()));
  EXPECT_EQ(board.snapshot().at("gpu-0"),
            (std::vector<Taint>{{"gpu.nvidia.com/xid", "63", "NoSchedule", "2025-06-01T12:00:10Z"}}));
  EXPECT_EQ(board.version(), 2u);
}

TEST(DraTaints, OtherEventsAndDisabledChecksTaintNothing) {
  TaintBoard board(devices());
  EXPECT_FALSE(board.apply(NvmlEvent{.uuid = "GPU-0",
                                     .type = nvmlEventTypeDoubleBitEccError,
                                     .data = 0,
                                     .gi = std::nullopt,
                                     .ci = std::nullopt},
                           policy()));
  EXPECT_FALSE(board.apply(xid("GPU-0", 79), policy("all")));
  EXPECT_FALSE(board.apply(xid("GPU-9", 79), policy())) << "a GPU without published devices";
  EXPECT_TRUE(board.snapshot().empty());
  EXPECT_EQ(board.version(), 0u);
  EXPECT_TRUE(board.apply(xid("GPU-0", 13), policy("", "13"))) << "13 taken off the skip list";
  EXPECT_EQ(board.snapshot().at("gpu-0").at(0).effect, "NoSchedule");
}

TEST(DraTaints, LostNvmlTaintsEveryDeviceBesideItsXid) {
  FakeClock clock;
  TaintBoard board(devices(), clock.clock());
  EXPECT_TRUE(board.apply(xid("GPU-0", 79), policy()));
  EXPECT_TRUE(board.mark_lost());
  EXPECT_FALSE(board.mark_lost());
  const auto taints = board.snapshot();
  ASSERT_EQ(taints.size(), 3u);
  EXPECT_EQ(taints.at("gpu-0"),
            (std::vector<Taint>{{"gpu.nvidia.com/xid", "79", "NoSchedule", "2025-06-01T12:00:00Z"},
                                {"gpu.nvidia.com/gpu-lost", "", "NoSchedule", "2025-06-01T12:00:00Z"}}));
  EXPECT_EQ(taints.at("gpu-1-mig-b-2-0"),
            (std::vector<Taint>{{"gpu.nvidia.com/gpu-lost", "", "NoSchedule", "2025-06-01T12:00:00Z"}}));
  EXPECT_EQ(board.version(), 2u);
}

TEST(DraTaints, ClearIsARediscovery) {
  TaintBoard board(devices());
  EXPECT_TRUE(board.mark_lost());
  board.clear();
  EXPECT_TRUE(board.snapshot().empty());
  EXPECT_EQ(board.version(), 2u);
  board.clear();
  EXPECT_EQ(board.version(), 2u) << "nothing to clear is no change";
  board.clear(std::vector<Device>{gpu("gpu-5", "GPU-5")});
  EXPECT_TRUE(board.mark_lost());
  const auto taints = board.snapshot();
  ASSERT_EQ(taints.size(), 1u);
  EXPECT_EQ(taints.begin()->first, "gpu-5");
  EXPECT_FALSE(board.apply(xid("GPU-0", 79), policy())) << "GPU 0 is gone";
}

}  // namespace
}  // namespace gpuctk::dra
