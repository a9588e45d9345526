#pragma once
// The shapes of the OCI runtime-spec Go types (specs-go/config.go and state.go, runtime-spec 1.3.0) as
// runc's encoding/json decoder sees them: for each struct the JSON names of all its fields, for each field
// the shape of its value. parse_json uses them to refuse keys that runc would read as a field while a JSON
// DOM (and so gpuctk) would not: "Process" or "proce\u017fs" for `process` (see oci/json_text.hpp).
//
// Every struct is listed, including the windows/solaris/vm/zos/freebsd ones: runc on Linux decodes them too.
// A field added to the runtime-spec later is not checked until it is added here; it is one gpuctk neither
// reads nor writes, so gpuctk and runc still agree on everything gpuctk looks at.

#include "oci/json_text.hpp"

namespace gpuctk::oci {

// specs.Spec: the document of config.json.
const JsonShape& config_shape();

// specs.State: the state a runtime writes to a hook's stdin.
const JsonShape& state_shape();

}  // namespace gpuctk::oci
