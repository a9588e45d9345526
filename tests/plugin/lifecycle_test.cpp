// The daemon's life-cycle decisions: Register's backoff, inotify's names, MPS waits, what a reload
// changed, and the refused /proc fallback.
#include "plugin/lifecycle.hpp"

#include <gtest/gtest.h>
#include <sys/inotify.h>

#include <cstring>

namespace gpuctk::plugin {
namespace {

using std::chrono::seconds;

TEST(PluginBackoff, DoublesFromOneSecondToThirtyAndStartsOverOnReset) {
  Backoff backoff;
  std::vector<seconds> delays;
  for (int i = 0; i < 7; ++i) {
    delays.push_back(backoff.next());
  }
  EXPECT_EQ(delays, (std::vector<seconds>{seconds(1), seconds(2), seconds(4), seconds(8), seconds(16),
                                          seconds(30), seconds(30)}));
  backoff.reset();
  EXPECT_EQ(backoff.next(), seconds(1));
}

// One inotify event as the kernel writes it: the header, then the name NUL-padded to `padded` bytes.
void append_event(std::string& buffer, std::string_view name, uint32_t padded) {
  inotify_event event{};
  event.wd = 1;
  event.mask = IN_CREATE;
  event.len = padded;
  buffer.append(reinterpret_cast<const char*>(&event), sizeof event);
  std::string field(name);
  field.resize(padded, '\0');
  buffer += field;
}

TEST(PluginInotify, NamesInOrderSkippingNamelessAndTruncatedEvents) {
  std::string buffer;
  append_event(buffer, "kubelet.sock", 16);
  append_event(buffer, "", 0);  // about the directory itself
  append_event(buffer, "..data", 16);
  append_event(buffer, "cut", 16);
  buffer.resize(buffer.size() - 4);  // the last event's name cut short
  EXPECT_EQ(inotify_names(buffer), (std::vector<std::string>{"kubelet.sock", "..data"}));
  EXPECT_TRUE(inotify_names(std::string_view("short")).empty());
}

Resource resource(const std::string& name, std::vector<std::string> ids, uint32_t replicas = 0) {
  Resource r{.name = name, .devices = {}};
  for (auto& id : ids) {
    Device d;
    d.id = std::move(id);
    d.replicas = replicas;
    r.devices.push_back(std::move(d));
  }
  return r;
}

TEST(PluginMpsWait, OnlyReplicatedResourcesOfAnMpsConfigWait) {
  Config mps;
  mps.sharing = labels::SharingStrategy::mps;
  Config slicing;
  slicing.sharing = labels::SharingStrategy::time_slicing;
  const auto shared = resource("nvidia.com/gpu", {"GPU-a::0", "GPU-a::1"}, 2);
  const auto whole = resource("nvidia.com/mig-1g.5gb", {"MIG-a"});
  EXPECT_TRUE(shared_through_mps(mps, shared));
  EXPECT_FALSE(shared_through_mps(mps, whole));
  EXPECT_FALSE(shared_through_mps(slicing, shared));
  EXPECT_FALSE(shared_through_mps(Config{}, shared));
}

TEST(PluginReload, ChangesNameEachResourceThatChangedOnly) {
  const std::vector<Resource> before = {resource("nvidia.com/gpu", {"GPU-a", "GPU-b"}),
                                        resource("nvidia.com/gpu.shared", {"GPU-c::0"}),
                                        resource("nvidia.com/mig-1g.5gb", {"MIG-a"})};
  const std::vector<Resource> after = {resource("nvidia.com/gpu", {"GPU-a::0", "GPU-a::1", "GPU-b::0"}),
                                       resource("nvidia.com/mig-1g.5gb", {"MIG-a"}),
                                       resource("nvidia.com/mig-3g.20gb", {"MIG-b", "MIG-c"})};
  EXPECT_EQ(resource_changes(before, after),
            (std::vector<std::string>{"nvidia.com/gpu: 2 -> 3 devices (3 new, 2 gone)",
                                      "nvidia.com/gpu.shared: gone (1 device)",
                                      "nvidia.com/mig-3g.20gb: new, 2 devices"}));
  EXPECT_TRUE(resource_changes(after, after).empty());
}

TEST(PluginNvmlStart, AutoModeRefusesTheProcFallbackOnlyWhenTheDriverIsLoaded) {
  const std::string why = "nvml: nvmlInit_v2: Driver Not Loaded";
  const Config automatic;
  const auto refused = check_nvml_start(automatic, why, "/d/proc/driver/nvidia/version", true);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "NVML did not start: nvml: nvmlInit_v2: Driver Not Loaded; the driver is loaded "
            "(/d/proc/driver/nvidia/version), so the GPUs are not taken from /proc, where nothing would "
            "watch their health");
  EXPECT_TRUE(check_nvml_start(automatic, why, "/v", false));  // no driver: /proc says so
  EXPECT_TRUE(check_nvml_start(automatic, "", "/v", true));    // no NVML at all
  Config proc;
  proc.discovery = discover::Mode::proc;
  EXPECT_TRUE(check_nvml_start(proc, why, "/v", true));
}

}  // namespace
}  // namespace gpuctk::plugin
