#pragma once
// UTF-8 decoding, one sequence at a time: what escape_for_log (util/strings) and the exporter's text
// (metrics: counters files' HELP, label values from the kubelet) check untrusted bytes against.

#include <cstddef>
#include <string_view>

namespace gpuctk {

// The length of the well-formed UTF-8 sequence of two to four bytes at the start of `text` (not empty),
// its code point in `code_point`; 0 when it is not one: ASCII, a stray continuation byte, an overlong
// form, a surrogate, above U+10FFFF, cut short. The ranges are those of RFC 3629 / Unicode table 3-7.
size_t utf8_sequence_length(std::string_view text, char32_t& code_point);

}  // namespace gpuctk
