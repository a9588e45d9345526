#pragma once
// The base of the CLI tests that run gpuctk on a materialised fixture host: the host (skipped without
// root, whose device nodes are only regular files) and a scratch directory for run_gpuctk's output files.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "fixtures/builder/hosts.hpp"
#include "support/fixture_host.hpp"

namespace gpuctk::test {

class CliFixtureHostTest : public FixtureHostTest {
 protected:
  explicit CliFixtureHostTest(std::string host) : FixtureHostTest(std::move(host)) {}

  void SetUpHost() override {
    m_scratch = m_fixture->temp.path() + "/scratch";
    std::filesystem::create_directories(m_scratch);
  }

  std::string m_scratch;
};

}  // namespace gpuctk::test
