#pragma once
// The base of the CLI tests that run gpuctk on a materialised fixture host: the host (skipped without
// root, whose device nodes are only regular files) and a scratch directory for run_gpuctk's output files.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "fixtures/builder/hosts.hpp"

namespace gpuctk::test {

class CliFixtureHostTest : public ::testing::Test {
 protected:
  explicit CliFixtureHostTest(std::string host) : m_host(std::move(host)) {}

  void SetUp() override {
    auto f = fixture::materialise_temp(m_host);
    ASSERT_TRUE(f) << f.error().message;
    m_fixture = std::make_unique<fixture::Fixture>(std::move(*f));
    if (!m_fixture->host.nodes_are_real) {
      GTEST_SKIP() << "device nodes need root to mknod";
    }
    m_scratch = m_fixture->temp.path() + "/scratch";
    std::filesystem::create_directories(m_scratch);
  }

  std::string m_host;  // the fixture host's name, "dgx-a100"
  std::unique_ptr<fixture::Fixture> m_fixture;
  std::string m_scratch;
};

}  // namespace gpuctk::test
