# cmake -DINPUT=<api.proto> -DOUTPUT=<copy> [-DPACKAGE=<package>] -P gpuctk_proto_copy.cmake
# The kubelet's api.proto as Debian 12's protoc (3.21) compiles it: field options that protoc does not
# know are left out of the copy. Each row: the option, and the protobuf release that added it.
#   [debug_redact = true]   protobuf 22: marks a field to redact in debug output (later kubelet protos)
# Everything else, the gogoproto options included, is kept: gogo.proto is compiled beside it.
file(READ ${INPUT} text)
string(REGEX REPLACE "[ \t]*\\[debug_redact = true\\]" "" text "${text}")
if(text MATCHES "debug_redact")
  message(FATAL_ERROR "${INPUT}: a debug_redact option is left that this script does not know how to drop")
endif()
# PACKAGE: the copy declares this package instead (the kubelet's DRA API v1 is v1beta1's messages and
# service under another package; Debian's kubelet package predates it).
if(PACKAGE)
  string(REGEX REPLACE "\npackage [A-Za-z0-9_.]+;" "\npackage ${PACKAGE};" renamed "${text}")
  if(renamed STREQUAL text)
    message(FATAL_ERROR "${INPUT}: no package line to rename to ${PACKAGE}")
  endif()
  set(text "${renamed}")
endif()
file(WRITE ${OUTPUT} "${text}")
