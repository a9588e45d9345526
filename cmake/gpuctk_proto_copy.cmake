# cmake -DINPUT=<api.proto> -DOUTPUT=<copy> -P gpuctk_proto_copy.cmake
# The kubelet's api.proto as Debian 12's protoc (3.21) compiles it: field options that protoc does not
# know are left out of the copy. Each row: the option, and the protobuf release that added it.
#   [debug_redact = true]   protobuf 22: marks a field to redact in debug output (later kubelet protos)
# Everything else, the gogoproto options included, is kept: gogo.proto is compiled beside it.
file(READ ${INPUT} text)
string(REGEX REPLACE "[ \t]*\\[debug_redact = true\\]" "" text "${text}")
if(text MATCHES "debug_redact")
  message(FATAL_ERROR "${INPUT}: a debug_redact option is left that this script does not know how to drop")
endif()
file(WRITE ${OUTPUT} "${text}")
