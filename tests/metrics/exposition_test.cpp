// The text exposition, line for line as dcgm-exporter writes it (its label order), with escaping, numbers
// and what is left out.
#include "metrics/exposition.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "metrics/sample_collection.hpp"

namespace gpuctk::metrics {
namespace {

// The counters named, with the default set's type and HELP.
std::vector<Counter> counters_of(std::initializer_list<std::string_view> names) {
  std::vector<Counter> out;
  for (const auto name : names) {
    for (const auto& c : default_counters().counters) {
      if (c.field->name == name) {
        out.push_back(c);
      }
    }
    if (out.empty() || out.back().field->name != name) {
      ADD_FAILURE() << name << " is not in the default set";
    }
  }
  return out;
}

DeviceReading gpu0() {
  DeviceReading d;
  d.gpu = 0;
  d.uuid = "GPU-0aa7c9f2";
  d.pci_bus_id = "00000000:07:00.0";
  d.device = "nvidia0";
  d.model_name = "NVIDIA A100-SXM4-40GB";
  d.sample.gpu_temperature_c = 34;
  d.sample.power_mw = 61234;
  d.sample.fb_used_bytes = 1024ULL << 20;
  return d;
}

DeviceReading mig_of(const DeviceReading& gpu, uint32_t gi, std::string profile) {
  DeviceReading d = gpu;
  d.gpu_instance_id = gi;
  d.gpu_instance_profile = std::move(profile);
  d.mig_uuid = "MIG-5c1e";
  d.sample = {};
  d.sample.fb_used_bytes = 13ULL << 20;
  return d;
}

std::string rendered(const std::vector<Counter>& counters, const Collection& collection) {
  std::string out = "left over from the last scrape";
  render(counters, collection, out);
  return out;
}

TEST(MetricsExposition, WritesDcgmExportersLayoutAndLabelOrder) {
  Collection c;
  c.hostname = "node1";
  c.driver_version = "550.54.15";
  c.devices = {gpu0(), mig_of(gpu0(), 9, "1g.5gb")};
  c.devices[1].holders = {Holder{"train-0", "ml", "main"}};
  const auto counters = counters_of(
      {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_DEV_FB_USED"});
  EXPECT_EQ(rendered(counters, c),
            R"(# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="node1",DCGM_FI_DRIVER_VERSION="550.54.15"} 34
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="node1",DCGM_FI_DRIVER_VERSION="550.54.15"} 61.234
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",Hostname="node1",DCGM_FI_DRIVER_VERSION="550.54.15"} 1024
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",GPU_I_PROFILE="1g.5gb",GPU_I_ID="9",Hostname="node1",DCGM_FI_DRIVER_VERSION="550.54.15",container="main",namespace="ml",pod="train-0"} 13
)");
}

TEST(MetricsExposition, OneLinePerHolderWithTheSameValue) {
  Collection c;
  c.devices = {gpu0()};
  c.devices[0].holders = {Holder{"a", "ns1", "c1"}, Holder{"b", "ns2", "c2"}};
  EXPECT_EQ(rendered(counters_of({"DCGM_FI_DEV_GPU_TEMP"}), c),
            R"(# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",container="c1",namespace="ns1",pod="a"} 34
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",container="c2",namespace="ns2",pod="b"} 34
)");
}

TEST(MetricsExposition, XidErrorsCarryErrCodeAmongThePodLabels) {
  Collection c;
  c.devices = {gpu0()};
  c.devices[0].last_xid = 79;
  c.devices[0].holders = {Holder{"p", "n", "c"}};
  const auto text = rendered(counters_of({"DCGM_FI_DEV_XID_ERRORS"}), c);
  EXPECT_EQ(text, R"(# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB",container="c",err_code="79",namespace="n",pod="p"} 79
)");
  c.devices[0].holders.clear();
  EXPECT_NE(rendered(counters_of({"DCGM_FI_DEV_XID_ERRORS"}), c)
                .find(R"(modelName="NVIDIA A100-SXM4-40GB",err_code="79"} 79)"),
            std::string::npos);
}

TEST(MetricsExposition, ACounterWithoutASampleIsLeftOutWhole) {
  Collection c;
  c.devices = {gpu0(), mig_of(gpu0(), 1, "7g.40gb")};
  const auto text = rendered(
      counters_of({"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}), c);
  EXPECT_EQ(text.find("SM_CLOCK"), std::string::npos) << text;
  EXPECT_EQ(text.find("ECC"), std::string::npos) << text;
  // The MIG device has no temperature of its own: the GPU's line only.
  EXPECT_EQ(text, R"(# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB"} 34
)");
  EXPECT_EQ(rendered(counters_of({"DCGM_FI_DEV_SM_CLOCK"}), c), "");
}

TEST(MetricsExposition, AMigDeviceOfUnknownProfileStillHasItsInstanceLabels) {
  Collection c;
  c.devices = {mig_of(gpu0(), 3, "")};
  EXPECT_NE(rendered(counters_of({"DCGM_FI_DEV_FB_USED"}), c).find(R"(,GPU_I_PROFILE="",GPU_I_ID="3"} 13)"),
            std::string::npos);
}

TEST(MetricsExposition, EscapesLabelValuesAndHelp) {
  Collection c;
  c.hostname = "node\\1";
  c.driver_version = "550\"x";
  c.devices = {gpu0()};
  c.devices[0].model_name = "A100 \"SXM\"\nnext";
  c.devices[0].holders = {Holder{"pod\"}\n# HELP fake", "ns\\", "c\xFF\xC3(\xE2\x82\xAC"}};
  std::vector<Counter> counters = counters_of({"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DRIVER_VERSION"});
  counters[0].help = "Temp \\ in C\nsecond line \"quoted\" \xC3\xA9";
  EXPECT_EQ(
      rendered(counters, c),
      "# HELP DCGM_FI_DEV_GPU_TEMP Temp \\\\ in C\\nsecond line \"quoted\" \xC3\xA9\n"
      "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
      "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-0aa7c9f2\",pci_bus_id=\"00000000:07:00.0\",device="
      "\"nvidia0\","
      "modelName=\"A100 \\\"SXM\\\"\\nnext\",Hostname=\"node\\\\1\",DCGM_FI_DRIVER_VERSION=\"550\\\"x\","
      "container=\"c\xEF\xBF\xBD\xEF\xBF\xBD(\xE2\x82\xAC\",namespace=\"ns\\\\\",pod=\"pod\\\"}\\n# HELP "
      "fake\"} 34\n");
}

TEST(MetricsExposition, NumbersAsDcgmTypesThem) {
  Collection c;
  c.devices = {gpu0()};
  auto& s = c.devices[0].sample;
  const auto counters = counters_of(
      {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_PROF_PCIE_RX_BYTES"});
  const auto values = [&] {
    std::string text = rendered(counters, c);
    std::string out;
    for (std::size_t at = text.find("} "); at != std::string::npos; at = text.find("} ", at + 1)) {
      out += text.substr(at + 2, text.find('\n', at) - at - 2) + " ";
    }
    return out;
  };
  s.power_mw = 100000;
  s.energy_mj = 18446744073709551615ULL;  // past int64: the double (2^64) as its shortest text
  s.pcie_rx_kb_per_s = 4294967295U;
  EXPECT_EQ(values(), "100 18446744073709551616 4398046510080 ");
  s.power_mw = 1;
  s.energy_mj = 9007199254740993ULL;  // 2^53 + 1: the nearest double, as an integer
  s.pcie_rx_kb_per_s = 0;
  EXPECT_EQ(values(), "0.001 9007199254740992 0 ");
  s.power_mw = 123457;
  EXPECT_EQ(values().substr(0, 8), "123.457 ");
}

// A field whose value is not finite: its line is left out, not written as NaN or +Inf.
std::optional<double> not_finite(const DeviceReading& reading) {
  return reading.gpu == 0 ? std::numeric_limits<double>::quiet_NaN()
                          : std::numeric_limits<double>::infinity();
}
constexpr Field k_not_finite{"DCGM_FI_TEST_NOT_FINITE", MetricType::gauge, not_finite, false};

TEST(MetricsExposition, ValuesThatAreNotFiniteAreLeftOut) {
  Collection c;
  c.devices = {gpu0(), gpu0()};
  c.devices[1].gpu = 1;
  EXPECT_EQ(rendered({Counter{&k_not_finite, MetricType::gauge, "x"}}, c), "");
}

TEST(MetricsExposition, CounterTypeAndNoHostnameWhenNoneIsWanted) {
  Collection c;
  c.hostname = "";
  c.driver_version = "";
  c.devices = {gpu0()};
  c.devices[0].sample.energy_mj = 5;
  EXPECT_EQ(rendered(counters_of({"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DRIVER_VERSION"}), c),
            R"(# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-0aa7c9f2",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-40GB"} 5
)");
}

TEST(MetricsExposition, EmptyCollectionOrCountersWriteNothing) {
  EXPECT_EQ(rendered(default_counters().counters, Collection{}), "");
  EXPECT_EQ(rendered({}, test::large_collection(1, 1)), "");
}

TEST(MetricsExposition, ReusesTheBufferAndWritesTheSameBytesEachTime) {
  const auto collection = test::large_collection();
  std::string out;
  render(default_counters().counters, collection, out);
  const std::string first = out;
  const auto capacity = out.capacity();
  const auto* data = out.data();
  render(default_counters().counters, collection, out);
  EXPECT_EQ(out, first);
  EXPECT_EQ(out.capacity(), capacity);
  EXPECT_EQ(out.data(), data);
}

TEST(MetricsExposition, LargeCollectionHasEveryLine) {
  const auto collection = test::large_collection();
  std::string out;
  render(default_counters().counters, collection, out);
  std::size_t lines = 0;
  std::size_t helps = 0;
  for (std::size_t at = 0; at < out.size(); at = out.find('\n', at) + 1) {
    ++lines;
    helps += out.compare(at, 7, "# HELP ") == 0 ? 1 : 0;
  }
  // GPUs: every default field but XID (no Xid seen) and the retired pages (an A100 has none), 24 of them;
  // MIG devices: FB_FREE and FB_USED (a MIG device reports no reserved memory here), 1 or 3 lines each.
  std::size_t mig_lines = 0;
  for (const auto& d : collection.devices) {
    mig_lines += d.gpu_instance_id ? d.holders.size() : 0;
  }
  EXPECT_EQ(helps, 24u);
  EXPECT_EQ(lines, 24 * 2 + 24 * 8 + 2 * mig_lines);
}

}  // namespace
}  // namespace gpuctk::metrics
