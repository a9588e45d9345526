#pragma once
// A fixture host (fixtures/hosts/<name>/host.yaml) materialised for a test that needs its device nodes
// real: the one set-up every test that discovers a whole fixture host starts with.

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "discover/discover.hpp"
#include "fixtures/builder/hosts.hpp"

namespace gpuctk::test {

// The host `name` materialised in its own temporary directory; nullptr, with the test failed (fatally)
// when it cannot be made, or skipped when its device nodes are regular files (mknod needs root). `why`
// says in the skip what the test needs the nodes for. A caller returns at once on nullptr (a fixture's
// SetUp too: gtest then runs no test body).
inline std::unique_ptr<fixture::Fixture> host_with_real_nodes(std::string_view name,
                                                              std::string_view why = {}) {
  auto made = fixture::materialise_temp(name);
  if (!made) {
    [&] { FAIL() << name << ": " << made.error().message; }();
    return nullptr;
  }
  if (!made->host.nodes_are_real) {
    [&] {
      GTEST_SKIP() << "device nodes need root to mknod" << (why.empty() ? "" : "; ") << why << " (" << name
                   << " has regular files)";
    }();
    return nullptr;
  }
  return std::make_unique<fixture::Fixture>(std::move(*made));
}

// The host `name` materialised in its own temporary directory, whatever its device nodes are; when it
// cannot be made, the test fails and the test binary ends (for helpers that return the host itself).
inline fixture::Fixture materialise_or_die(std::string_view name) {
  auto made = fixture::materialise_temp(name);
  if (!made) {
    ADD_FAILURE() << name << ": " << made.error().message;
    std::abort();
  }
  return std::move(*made);
}

// The base of the tests of a fixture host: use_host materialises it into m_fixture with
// host_with_real_nodes, then runs the test's own SetUpHost (not when the host is missing or skipped).
class FixtureHostTest : public ::testing::Test {
 protected:
  // `host`: the one every test of the fixture uses, made in SetUp; none: each test calls use_host, then
  // returns at once when it failed or was skipped: `if (IsSkipped() || HasFatalFailure()) return;`.
  explicit FixtureHostTest(std::string host = {}) : m_host(std::move(host)) {}

  void SetUp() final {
    if (!m_host.empty()) {
      use_host(m_host);
    }
  }
  void use_host(std::string_view host) {
    m_host = host;
    m_fixture = host_with_real_nodes(host);
    if (m_fixture) {
      SetUpHost();
    }
  }
  virtual void SetUpHost() {}

  std::string m_host;  // the fixture host's name, "dgx-a100"
  std::unique_ptr<fixture::Fixture> m_fixture;
};

// Discovery's options for the host `f`: its driver root and dev root, in `mode`.
inline discover::DiscoverOptions discover_options(const fixture::Fixture& f, discover::Mode mode) {
  discover::DiscoverOptions options;
  options.driver_root = f.host.driver_root;
  options.dev_root = f.host.dev_root;
  options.mode = mode;
  return options;
}

}  // namespace gpuctk::test
