#pragma once
// gpuctk-device-plugin's log: one line on stderr per call, "gpuctk-device-plugin: <line>" (errors:
// "gpuctk-device-plugin: error: <line>"), escaped (escape_for_log: a pod's or a file's bytes cannot forge
// lines), written with one write(2) so that the threads' lines never interleave.

#include <string_view>

namespace gpuctk::plugin {

void log(std::string_view text);
void log_error(std::string_view text);

}  // namespace gpuctk::plugin
