#pragma once
// The fixture of the injection tests (inject_test.cpp, mps_test.cpp): a materialised fixture host (root:
// its device nodes are real), a spec directory of its own, runc's default config.json with variables
// added, and injection through inject::inject_request.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cdi/codec.hpp"
#include "cdi/spec_builder.hpp"
#include "discover/discover.hpp"
#include "fixtures/builder/hosts.hpp"
#include "inject/inject.hpp"
#include "oci/bundle.hpp"
#include "support/fixture_host.hpp"
#include "util/file.hpp"

namespace gpuctk::inject {

using nlohmann::ordered_json;

inline const std::string k_data = std::string(GPUCTK_SOURCE_DIR) + "/tests/data/oci/";

class InjectTest : public ::testing::Test {
 protected:
  void SetUp() override { materialise("t4-debian"); }

  void materialise(std::string_view host) {
    m_fixture = test::host_with_real_nodes(host);
    if (!m_fixture) {
      return;
    }
    m_cfg = config::Config{};
    m_cfg.driver_root = m_fixture->host.driver_root;
    m_cfg.dev_root = m_fixture->host.dev_root;
    m_cfg.spec_dirs = {m_fixture->temp.path() + "/cdi"};
    std::filesystem::create_directories(m_cfg.spec_dirs[0]);
  }

  // Writes the host's spec (proc mode, fixed hook path) into the spec directory.
  void install_spec(std::string_view driver_version_override = "") {
    discover::DiscoverOptions o{m_cfg.driver_root, m_cfg.dev_root, discover::Mode::proc, {}, {}};
    auto inv = discover::discover(o);
    ASSERT_TRUE(inv) << inv.error().message;
    if (!driver_version_override.empty()) {
      inv->driver_version = std::string(driver_version_override);
    }
    cdi::BuildOptions b;
    b.hook_path = "/usr/local/bin/gpuctk";
    b.libraries32 = true;  // as `cdi generate --compat32` writes it: the capability filter has them to filter
    auto spec = cdi::build_spec(*inv, b);
    ASSERT_TRUE(spec);
    ASSERT_TRUE(write_file_atomic(m_cfg.spec_dirs[0] + "/nvidia.yaml",
                                  cdi::write_spec(*spec, cdi::Format::yaml), 0644));
  }

  static ordered_json runc_config(const std::vector<std::string>& env) {
    auto config = oci::parse_config(read_file(k_data + "runc-spec-config.json").value()).value();
    for (const auto& e : env) {
      config["process"]["env"].push_back(e);
    }
    return config;
  }

  Result<InjectResult> inject(ordered_json& config) { return inject_request(config, m_cfg, m_log); }

  std::unique_ptr<fixture::Fixture> m_fixture;
  config::Config m_cfg;
  config::Log m_log;
};

inline std::vector<std::string> device_paths(const ordered_json& config) {
  std::vector<std::string> out;
  for (const auto& d : config["linux"]["devices"]) {
    out.push_back(d["path"]);
  }
  return out;
}

inline bool has_mount(const ordered_json& config, std::string_view destination) {
  for (const auto& m : config["mounts"]) {
    if (m["destination"] == destination) {
      return true;
    }
  }
  return false;
}

}  // namespace gpuctk::inject
