// The CDI spec reader, YAML: the fast canonical path (cdi/canonical_yaml.cpp) against yaml-cpp.
//
// Differential: whatever the fast path accepts, yaml-cpp must read too, as the very same tree (the
// fast path may decline anything; it may never decide differently). Then the whole codec: a spec it
// accepts must survive check_spec_round_trip. Seeds: the golden specs, tests/data/cdi and every spec
// of those written by the codec (fuzz/support/make_seeds.cpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cdi/codec.hpp"
#include "cdi/doc_tree.hpp"
#include "support/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto fast = gpuctk::cdi::read_canonical_yaml(text)) {
    const auto slow = gpuctk::cdi::read_yaml_document(text);
    GPUCTK_FUZZ_CHECK(slow.has_value(), slow ? text : slow.error().message);
    GPUCTK_FUZZ_CHECK(*fast == *slow, text);
  }
  if (const auto spec = gpuctk::cdi::parse_spec(text, gpuctk::cdi::Format::yaml)) {
    gpuctk::fuzz::check_spec_round_trip(*spec);
  }
  return 0;
}
