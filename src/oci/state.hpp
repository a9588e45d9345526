#pragma once
// The OCI state a runtime writes to a hook's stdin (OCI runtime-spec "State").
//
// Both flavours seen in practice are read (captured at prestart on Debian 12; tests/oci/state_test.cpp
// holds them verbatim):
//   runc 1.1: {"ociVersion":"1.0.2-dev","id":"c1","status":"creating","pid":8808,"bundle":"/b",
//              "annotations":{...}}
//   crun 1.8: {"ociVersion":"1.0","id":"c1","pid":10046,"root":"rootfs","bundle":"/b",
//              "status":"created","annotations":{...}}
// `annotations` is omitted by both when the config has none; `pid` is absent in runc's poststop
// state and 0 in crun's; crun adds `root` (the raw root.path). Runtimes before OCI 1.0 (docker
// before 17.06) wrote `bundlePath`, accepted when `bundle` is absent. Unknown keys are ignored.

#include <map>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::oci {

struct State {
  std::string oci_version;  // `ociVersion`; empty when absent
  std::string id;           // container id; required
  std::string status;       // creating, created, running, stopped; empty when absent
  std::string bundle;       // absolute bundle directory; required (`bundle` or `bundlePath`)
  int pid = 0;              // host pid of the container init in prestart/createRuntime; 0 when absent
  std::map<std::string, std::string> annotations;
  std::string root;  // crun only: root.path as written in config.json
};

// The state in `json`. Errors start with "OCI state: ":
//   OCI state: syntax error while parsing value - ... at line 1, column 1
//   OCI state: the document is an array, expected an object
//   OCI state: missing "bundle"
//   OCI state: "pid" is a string, expected a non-negative integer
//   OCI state: annotation "a" is a number, expected a string
Result<State> parse_state(std::string_view json);

}  // namespace gpuctk::oci
