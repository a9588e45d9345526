// dra::devices_of: the published devices of fixture hosts discovered through the mock NVML (and in proc
// mode), the API's rules on them, and the comparison of their attribute names with NVIDIA's driver's
// (tests/dra/nvidia_attributes.txt).
#include "dra/devices.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "discover/discover.hpp"
#include "support/fixture_host.hpp"
#include "util/file.hpp"

namespace gpuctk::dra {
namespace {

using Type = Attribute::Type;
constexpr uint64_t k_mib = 1024ull * 1024;
constexpr uint64_t k_gib = 1024 * k_mib;

Attribute text(std::string value) {
  return {Type::string, std::move(value)};
}
Attribute version(std::string value) {
  return {Type::version, std::move(value)};
}
Attribute integer(int value) {
  return {Type::integer, std::to_string(value)};
}

// Fixture host `name` discovered in `mode` into `out`; call with ASSERT_NO_FATAL_FAILURE, then return at once
// when the test was skipped (no real device nodes).
void discover_host(std::string_view name, discover::Mode mode, discover::Inventory& out) {
  const auto f = test::host_with_real_nodes(name, "discovery needs them");
  if (!f) {
    return;
  }
  auto inventory = discover::discover(test::discover_options(*f, mode));
  ASSERT_TRUE(inventory) << inventory.error().message;
  out = std::move(*inventory);
}

TEST(DraBinaryQuantity, TakesTheLargestBinarySuffixThatDividesExactly) {
  EXPECT_EQ(binary_quantity(0), "0");
  EXPECT_EQ(binary_quantity(14), "14");
  EXPECT_EQ(binary_quantity(1000), "1000");
  EXPECT_EQ(binary_quantity(1024), "1Ki");
  EXPECT_EQ(binary_quantity(1536), "1536");
  EXPECT_EQ(binary_quantity(24 * k_gib), "24Gi");
  EXPECT_EQ(binary_quantity(24064 * k_mib), "24064Mi");
  EXPECT_EQ(binary_quantity(3 * 1024 * k_gib), "3Ti");
  EXPECT_EQ(binary_quantity(5 * 1024 * 1024 * k_gib), "5Pi");
  EXPECT_EQ(binary_quantity(uint64_t{1} << 60), "1Ei");
  EXPECT_EQ(binary_quantity(uint64_t{15} << 60), "15Ei");
  EXPECT_EQ(binary_quantity(UINT64_MAX), "18446744073709551615");
}

TEST(DraSemanticVersion, CompletesAndDropsLeadingZerosAsMastermindsSemver) {
  EXPECT_EQ(semantic_version("8.0"), "8.0.0");
  EXPECT_EQ(semantic_version("12"), "12.0.0");
  EXPECT_EQ(semantic_version("12.4"), "12.4.0");
  EXPECT_EQ(semantic_version("550.54.15"), "550.54.15");
  EXPECT_EQ(semantic_version("535.104.05"), "535.104.5");
  EXPECT_EQ(semantic_version("580.95.05"), "580.95.5");
  EXPECT_EQ(semantic_version("007.0.0"), "7.0.0");
  for (const char* bad : {"", "1.2.3.4", "1..2", "1.", ".1", "v1.2", "1.2-beta", "-1", "1.x", " 1.2",
                          "99999999999999999999999.0"}) {
    EXPECT_EQ(semantic_version(bad), std::nullopt) << bad;
  }
}

TEST(DraNames, DeviceNamesAreDnsLabels) {
  EXPECT_TRUE(valid_device_name("gpu-0"));
  EXPECT_TRUE(valid_device_name("gpu-1-mig-1g24gb-gfx-3-0"));
  EXPECT_TRUE(valid_device_name(std::string(63, 'a')));
  for (const std::string& bad :
       std::vector<std::string>{"", "-gpu", "gpu-", "GPU-0", "gpu.0", "gpu_0", std::string(64, 'a')}) {
    EXPECT_FALSE(valid_device_name(bad)) << bad;
  }
}

TEST(DraNames, AttributeNamesAreCIdentifiersWithAnOptionalDomain) {
  EXPECT_TRUE(valid_qualified_name("productName"));
  EXPECT_TRUE(valid_qualified_name("resource.kubernetes.io/pciBusID"));
  EXPECT_TRUE(valid_qualified_name("_x1"));
  EXPECT_TRUE(valid_qualified_name(std::string(32, 'a')));
  for (const std::string& bad :
       std::vector<std::string>{"", "1abc", "a-b", "a.b", "/a", "x.io/", "X.io/a", "a/b/c",
                                std::string(33, 'a'), std::string(64, 'd') + "/a"}) {
    EXPECT_FALSE(valid_qualified_name(bad)) << bad;
  }
}

TEST(DraDevices, WholeGpuOfTheT4HostThroughNvml) {
  discover::Inventory inventory;
  ASSERT_NO_FATAL_FAILURE(discover_host("t4-debian", discover::Mode::nvml, inventory));
  if (IsSkipped()) {
    return;
  }
  const std::vector<Device> want{{
      .name = "gpu-0",
      .uuid = "GPU-473708f2-6eb9-5708-a0c1-d913c026ccc9",
      .parent_uuid = "",
      .cdi_name = "0",
      .gpu_index = 0,
      .mig = false,
      .gi = 0,
      .ci = 0,
      .attributes = {{"type", text("gpu")},
                     {"uuid", text("GPU-473708f2-6eb9-5708-a0c1-d913c026ccc9")},
                     {"index", integer(0)},
                     {"minor", integer(0)},
                     {"productName", text("Tesla T4")},
                     {"brand", text("Tesla")},
                     {"architecture", text("Turing")},
                     {"cudaComputeCapability", version("7.5.0")},
                     {"driverVersion", version("535.183.1")},
                     {"cudaDriverVersion", version("12.2.0")},
                     {"resource.kubernetes.io/pciBusID", text("0000:00:1e.0")},
                     {"pcieBusID", text("0000:00:1e.0")}},
      .capacity = {{"memory", "15Gi"}},
  }};
  std::vector<std::string> notes;
  EXPECT_EQ(devices_of(inventory, notes), want);
  EXPECT_TRUE(notes.empty());
}

// The MIG devices of a GPU in MIG mode, the GPU itself not published; the mock serves no engine or SM
// counts (0), the profile name comes from the slice counts and memory.
TEST(DraDevices, MigDevicesOfTheRtxProHostThroughNvml) {
  discover::Inventory inventory;
  ASSERT_NO_FATAL_FAILURE(discover_host("rtx-pro-6000-mig", discover::Mode::nvml, inventory));
  if (IsSkipped()) {
    return;
  }
  const std::string gpu = "GPU-6c8a1f3e-2d4b-5e9a-8f7c-1b2a3c4d5e6f";
  const auto mig = [&](std::string name, std::string uuid, std::string profile, uint32_t index, uint32_t gi) {
    return Device{.name = std::move(name),
                  .uuid = uuid,
                  .parent_uuid = gpu,
                  .cdi_name = "0:" + std::to_string(index),
                  .gpu_index = 0,
                  .mig = true,
                  .gi = gi,
                  .ci = 0,
                  .attributes = {{"type", text("mig")},
                                 {"uuid", text(uuid)},
                                 {"parentUUID", text(gpu)},
                                 {"profile", text(std::move(profile))},
                                 {"index", integer(static_cast<int>(index))},
                                 {"parentIndex", integer(0)},
                                 {"productName", text("NVIDIA RTX PRO 6000 Blackwell Server Edition")},
                                 {"brand", text("NvidiaRTX")},
                                 {"architecture", text("Blackwell")},
                                 {"cudaComputeCapability", version("12.0.0")},
                                 {"driverVersion", version("580.95.5")},
                                 {"cudaDriverVersion", version("13.0.0")},
                                 {"resource.kubernetes.io/pciBusID", text("0000:17:00.0")},
                                 {"pcieBusID", text("0000:17:00.0")}},
                  .capacity = {{"multiprocessors", "0"},
                               {"copyEngines", "0"},
                               {"decoders", "0"},
                               {"encoders", "0"},
                               {"jpegEngines", "0"},
                               {"ofaEngines", "0"},
                               {"memory", "24064Mi"}}};
  };
  const std::vector<Device> want{
      mig("gpu-0-mig-1g24gb-gfx-3-0", "MIG-4f2e8d1a-7b3c-5a6e-9d0f-2c1b4a3e5d7f", "1g.24gb+gfx", 0, 3),
      mig("gpu-0-mig-1g24gb-4-0", "MIG-8e1d3c5b-2a4f-5c7e-b9a8-6d5e4f3a2b1c", "1g.24gb", 1, 4)};
  EXPECT_EQ(devices_of(inventory), want);
}

// Proc mode knows no brand, architecture, compute capability, CUDA version or memory: those are left out,
// never published empty.
TEST(DraDevices, ProcModeLeavesOutWhatItDoesNotKnow) {
  discover::Inventory inventory;
  ASSERT_NO_FATAL_FAILURE(discover_host("t4-debian", discover::Mode::proc, inventory));
  if (IsSkipped()) {
    return;
  }
  const auto devices = devices_of(inventory);
  ASSERT_EQ(devices.size(), 1u);
  std::vector<std::string> names;
  for (const auto& [name, attribute] : devices[0].attributes) {
    names.push_back(name);
    EXPECT_FALSE(attribute.value.empty()) << name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"driverVersion", "index", "minor", "pcieBusID", "productName",
                                             "resource.kubernetes.io/pciBusID", "type", "uuid"}));
  EXPECT_EQ(devices[0].attributes.at("driverVersion"), version("535.183.1"));
  EXPECT_TRUE(devices[0].capacity.empty());
}

// Every device of a host with whole GPUs and MIG devices keeps the API's rules.
TEST(DraDevices, DevicesOfTheDgxHostKeepTheApiRules) {
  discover::Inventory inventory;
  ASSERT_NO_FATAL_FAILURE(discover_host("dgx-a100", discover::Mode::nvml, inventory));
  if (IsSkipped()) {
    return;
  }
  size_t mig_devices = 0;
  for (const auto& gpu : inventory.gpus) {
    mig_devices += gpu.mig_devices.size();
  }
  const auto devices = devices_of(inventory);
  ASSERT_EQ(devices.size(), 4 + mig_devices) << "GPUs 0-3 whole, GPUs 4-7 by their MIG devices";
  ASSERT_GT(mig_devices, 0u);
  std::set<std::string> names;
  for (const auto& device : devices) {
    EXPECT_TRUE(valid_device_name(device.name)) << device.name;
    EXPECT_TRUE(names.insert(device.name).second) << "duplicate " << device.name;
    EXPECT_LE(device.attributes.size() + device.capacity.size(), k_max_attributes_and_capacities);
    for (const auto& [name, attribute] : device.attributes) {
      EXPECT_TRUE(valid_qualified_name(name)) << name;
      EXPECT_FALSE(attribute.value.empty()) << device.name << " " << name;
      EXPECT_LE(attribute.value.size(), k_max_attribute_value) << device.name << " " << name;
      if (attribute.type == Type::version) {
        EXPECT_EQ(semantic_version(attribute.value), attribute.value) << device.name << " " << name;
      }
    }
  }
}

discover::Inventory one_gpu_inventory() {
  discover::Inventory inventory;
  inventory.driver_version = "550.54.15";
  inventory.cuda_version = "12.4";
  discover::Gpu gpu;
  gpu.uuid = "GPU-0";
  gpu.model = "NVIDIA A100-SXM4-40GB";
  gpu.bus_id = "0000:07:00.0";
  gpu.memory_bytes = 40 * k_gib;
  inventory.gpus.push_back(gpu);
  return inventory;
}

// What the API would refuse is left out with a note, never cut or published invalid.
TEST(DraDevices, ValuesTheApiWouldRefuseAreLeftOutWithANote) {
  auto inventory = one_gpu_inventory();
  inventory.gpus[0].model = std::string(65, 'M');
  inventory.driver_version = "550.54.15-beta";
  std::vector<std::string> notes;
  const auto devices = devices_of(inventory, notes);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_FALSE(devices[0].attributes.contains("productName"));
  EXPECT_FALSE(devices[0].attributes.contains("driverVersion"));
  EXPECT_EQ(devices[0].attributes.at("cudaDriverVersion"), version("12.4.0"));
  EXPECT_EQ(notes,
            (std::vector<std::string>{
                "gpu-0: productName left out: \"" + std::string(65, 'M') + "\" is longer than 64 characters",
                "gpu-0: driverVersion left out: \"550.54.15-beta\" is not a semantic version"}));

  inventory.gpus[0].model = std::string(64, 'M');  // the longest the API takes
  EXPECT_EQ(devices_of(inventory)[0].attributes.at("productName"), text(std::string(64, 'M')));
}

TEST(DraDevices, MigNamesFoldTheProfileIntoADnsLabelAndAGpuInMigModeIsNotPublished) {
  auto inventory = one_gpu_inventory();
  inventory.gpus[0].minor = 3;
  inventory.gpus[0].index = 2;
  inventory.gpus[0].mig_enabled = true;
  discover::MigDevice mig;
  mig.index = 1;
  mig.gi = 9;
  mig.ci = 2;
  mig.uuid = "MIG-0";
  mig.profile = "1c.2g.10GB+ME.all";
  inventory.gpus[0].mig_devices = {mig};
  mig.profile = "";  // unknown (no NVML attributes)
  mig.gi = 10;
  inventory.gpus[0].mig_devices.push_back(mig);
  mig.profile = std::string(60, 'x');
  inventory.gpus[0].mig_devices.push_back(mig);
  std::vector<std::string> notes;
  const auto devices = devices_of(inventory, notes);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].name, "gpu-3-mig-1c2g10gb-meall-9-2");
  EXPECT_EQ(devices[0].cdi_name, "2:1");
  EXPECT_FALSE(devices[0].capacity.contains("multiprocessors")) << "unknown without MigAttributes";
  EXPECT_EQ(devices[1].name, "gpu-3-mig-10-2");
  EXPECT_FALSE(devices[1].attributes.contains("profile"));
  EXPECT_EQ(notes, (std::vector<std::string>{"MIG device 2:1 left out: its name \"gpu-3-mig-" +
                                             std::string(60, 'x') + "-10-2\" is not a DNS label"}));
}

// One line of tests/dra/nvidia_attributes.txt.
struct NvidiaName {
  std::string device;  // "gpu", "mig"
  std::string what;    // "attribute", "capacity"
  std::string name;
  std::string kind;  // "string", "int", "bool", "version"; "quantity" for a capacity
  std::string source;
};

std::vector<NvidiaName> nvidia_names() {
  const auto text = read_file(std::string(GPUCTK_SOURCE_DIR) + "/tests/dra/nvidia_attributes.txt");
  EXPECT_TRUE(text) << text.error().message;
  std::vector<NvidiaName> out;
  std::istringstream lines(text.value_or(""));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() == '#') {
      continue;
    }
    std::istringstream fields(line);
    NvidiaName n;
    std::string extra;
    fields >> n.device >> n.what >> n.name >> n.kind >> n.source;
    EXPECT_FALSE(n.source.empty() || (fields >> extra)) << "malformed line: " << line;
    out.push_back(n);
  }
  return out;
}

const char* kind_of(Type type) {
  switch (type) {
    case Type::string:
      return "string";
    case Type::integer:
      return "int";
    case Type::boolean:
      return "bool";
    case Type::version:
      return "version";
  }
  return "?";
}

// Names NVIDIA publishes that gpuctk does not, and why.
const std::map<std::string, std::string> k_not_published = {
    {"resource.kubernetes.io/pcieRoot", "no sysfs topology is read"},
    {"addressingMode", "that NVML query is not made"},
    {"memorySlice<N>", "the inventory has no MIG placement"},
};

// Every name NVIDIA publishes on a GPU and a MIG device, gpuctk publishes with the same kind, but for the
// listed exceptions (which it must not publish); what gpuctk publishes beyond NVIDIA's names is listed.
TEST(DraDevices, PublishesNvidiasAttributeNamesWithTheirKinds) {
  discover::Inventory whole;
  ASSERT_NO_FATAL_FAILURE(discover_host("t4-debian", discover::Mode::nvml, whole));
  if (IsSkipped()) {
    return;
  }
  discover::Inventory mig;
  ASSERT_NO_FATAL_FAILURE(discover_host("rtx-pro-6000-mig", discover::Mode::nvml, mig));
  const std::map<std::string, Device> device{{"gpu", devices_of(whole).at(0)},
                                             {"mig", devices_of(mig).at(0)}};
  const auto names = nvidia_names();
  ASSERT_GE(names.size(), 30u);
  std::map<std::string, std::set<std::string>> nvidia;  // device type -> names
  for (const auto& n : names) {
    nvidia[n.device].insert(n.name);
    const auto& d = device.at(n.device);
    if (k_not_published.contains(n.name)) {
      EXPECT_FALSE(d.attributes.contains(n.name) || d.capacity.contains(n.name)) << n.name;
    } else if (n.what == "attribute") {
      ASSERT_TRUE(d.attributes.contains(n.name)) << n.device << " lacks NVIDIA's " << n.name;
      EXPECT_EQ(kind_of(d.attributes.at(n.name).type), n.kind) << n.device << " " << n.name;
    } else {
      EXPECT_EQ(n.what, "capacity");
      EXPECT_EQ(n.kind, "quantity");
      EXPECT_TRUE(d.capacity.contains(n.name)) << n.device << " lacks NVIDIA's capacity " << n.name;
    }
  }
  std::vector<std::string> beyond;
  for (const auto& [type, d] : device) {
    for (const auto& [name, attribute] : d.attributes) {
      if (!nvidia[type].contains(name)) {
        beyond.push_back(type + " attribute " + name);
      }
    }
    for (const auto& [name, quantity] : d.capacity) {
      if (!nvidia[type].contains(name)) {
        beyond.push_back(type + " capacity " + name);
      }
    }
  }
  EXPECT_EQ(beyond, std::vector<std::string>{}) << "gpuctk publishes names NVIDIA's driver does not";
}

}  // namespace
}  // namespace gpuctk::dra
