#pragma once
// Validation of a parsed spec against the CDI rules (SPEC.md and the CDI library), reporting every
// problem rather than the first.
//
// Where we are stricter than the reference library, on purpose:
//  - hook paths, device node paths and mount containerPaths must be absolute (SPEC.md says MUST for
//    hooks; relative container paths have no meaning, the library just does not check);
//  - a hook timeout must be > 0 when set (SPEC.md's MUST; the library does not check);
//  - a one-character vendor or class is rejected (released libraries crash on it);
//  - `permissions: none` is rejected (accepted only by unreleased library code);
//  - `type: u` needs a major (injection can never stat a "u" node);
//  - annotation keys are checked (the library's check is a no-op when runtimes load specs: it is given a
//    map[string]string and acts only on map[string]interface{});
//  - enableCMT/enableMBM in a spec declaring 1.1.0 or later (no released library accepts both).

#include <string>
#include <vector>

#include "cdi/names.hpp"
#include "cdi/spec.hpp"
#include "util/error.hpp"

namespace gpuctk::cdi {

struct Problem {
  // Path of the offending value: "kind", "devices[2].name", "containerEdits.hooks[0].hookName".
  std::string where{};
  // One sentence, quoting the value: `invalid hook name "preStart" (want prestart, ...)`.
  std::string what{};

  bool operator==(const Problem&) const = default;
};

// Every problem of `spec`, in file order (cdiVersion, kind, annotations, devices, containerEdits);
// empty when the spec is valid. Includes the version rule: cdiVersion must be a known version
// ("v" prefix tolerated) and not lower than minimum_version(spec).
std::vector<Problem> validate(const Spec& spec);

// What gpuctk writes passes its own validation before anyone reads it: `spec` (built, never parsed) with
// no problem. Error, the first problem: "generated <kind> spec is invalid: <where>: <what>".
Result<void> check_generated(const Spec& spec);

}  // namespace gpuctk::cdi
