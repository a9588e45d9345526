// plugin::mps_ready as gpuctk-device-plugin asks it, for the end-to-end tests of gpuctk-mps-control-daemon
// (mps_control_daemon.py): `gpuctk-mps-ready-check ROOT RESOURCE` prints "ready" and exits 0, or prints
// "not ready: <why>" and exits 1.
#include <cstdio>

#include "plugin/mps.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fputs("usage: gpuctk-mps-ready-check ROOT RESOURCE\n", stderr);
    return 2;
  }
  const auto ready = gpuctk::plugin::mps_ready(argv[1], argv[2]);
  if (!ready) {
    std::printf("not ready: %s\n", ready.error().message.c_str());
    return 1;
  }
  std::puts("ready");
  return 0;
}
