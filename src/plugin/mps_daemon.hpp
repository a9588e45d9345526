#pragma once
// gpuctk-mps-control-daemon: NVIDIA's mps-control-daemon (cmd/mps-control-daemon) on gpuctk's inventory.
// Built only with -DGPUCTK_DEVICE_PLUGIN=ON (it links no gRPC), installed with the device plugin.
//
// It takes gpuctk-device-plugin's flags, variables and config file (the same configuration, MPS_ROOT /
// --mps-root included), plus its own --mps-control-binary PATH (MPS_CONTROL_BINARY; default:
// nvidia-cuda-mps-control on PATH). Life, as NVIDIA's lives:
//   1. the configuration is resolved (an invalid one: one error line, exit 1); without sharing.mps it
//      logs that and waits for SIGTERM;
//   2. a fresh discovery and the device plugin's resources (build_resources); per MPS-shared resource a
//      plan (mps_control.hpp). Then <root>/shm gets a new tmpfs (half of MemTotal), and per resource:
//      <root>/<resource>/{pipe,log} made (mps_daemon_host.hpp: no link followed), compute mode
//      EXCLUSIVE_PROCESS on its GPUs through NVML, `nvidia-cuda-mps-control -d` (a daemon still
//      listening there from an earlier run is told to quit first), the limits, the health check, then
//      <root>/<resource>/.ready, which gpuctk-device-plugin waits for (mps.hpp: mps_ready);
//   3. a failed start is logged, what was started is stopped, and it is tried again in 30 s (NVIDIA's
//      retry); SIGHUP stops and starts again with the file read again (NVIDIA's restart);
//   4. SIGTERM, SIGINT or SIGQUIT: per resource .ready removed first (the plugin stops advertising
//      before the server goes), `quit`, a bounded wait for the control socket to stop accepting, compute
//      mode DEFAULT; then <root>/shm unmounted; exit 0.
// It is a child subreaper, so the control daemons (which fork away) are reaped here.
// Log lines go to stderr, "gpuctk-mps-control-daemon: <line>", escaped; errors "...: error: <what>".

#include <span>
#include <string_view>

namespace gpuctk::plugin {

// Runs the daemon for the arguments after argv[0]; returns the exit status: 0 after SIGTERM, --help or
// --version; 1 on an invalid configuration; 2 on a command-line error.
int run_mps_control_daemon(std::span<const std::string_view> args);

}  // namespace gpuctk::plugin
