// The CDI spec reader, JSON (cdi/codec.cpp): any bytes give a spec or an error, and a spec it accepts
// must survive check_spec_round_trip (both writers, the fast YAML path, validation). Seeds: the JSON
// specs of tests/data/cdi and every golden and test spec written as JSON by the codec.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cdi/codec.hpp"
#include "support/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto spec = gpuctk::cdi::parse_spec(text, gpuctk::cdi::Format::json)) {
    gpuctk::fuzz::check_spec_round_trip(*spec);
  }
  return 0;
}
