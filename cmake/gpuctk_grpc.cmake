# gRPC C++ for gpuctk-device-plugin, which serves the kubelet's device plugin API: the tools and libraries
# found once, and gpuctk_grpc_api(), which makes a static library of one API's C++ and gRPC stubs and links
# gRPC the way the daemon wants it. Included by the top CMakeLists.txt when GPUCTK_DEVICE_PLUGIN is on;
# gpuctk and gpuctk-exporter (nghttp2 and protobuf-lite: src/metrics) never link gRPC.
find_program(GPUCTK_PROTOC protoc REQUIRED)
find_program(GPUCTK_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
pkg_check_modules(GRPCXX REQUIRED IMPORTED_TARGET GLOBAL grpc++_unsecure protobuf)
set(GPUCTK_GOGO_PROTO github.com/gogo/protobuf/gogoproto/gogo.proto)
if(NOT EXISTS ${GPUCTK_GOGO_PROTO_ROOT}/${GPUCTK_GOGO_PROTO})
  message(FATAL_ERROR "GPUCTK_GOGO_PROTO_ROOT: no ${GPUCTK_GOGO_PROTO} below ${GPUCTK_GOGO_PROTO_ROOT} "
    "(golang-github-gogo-protobuf-dev: scripts/deps.sh plugin)")
endif()

# gpuctk_grpc_api(TARGET PROTO NAME CACHE_VARIABLE WHAT [PROTO NAME CACHE_VARIABLE WHAT]...): the static
# library TARGET of the stubs of one or more of the kubelet's PROTOs, generated at build time into the
# current binary directory's generated/ from a copy named NAME there ("api.proto": #include
# "api.grpc.pb.h"; a name without a folder, as scripts/lint.sh's layer rule takes the folder of an include
# for a module). gpuctk_proto_copy.cmake leaves out of the copy what Debian 12's protoc refuses; the
# repository holds no copy of the kubelet's files. A NAME of the form "copy.proto=PACKAGE" also renames the
# copy's package to PACKAGE (an API version no Debian package has yet whose messages are another version's).
# gogo.proto, whose options the copies keep importing, is compiled once beside them (so two of these
# libraries never go into one executable: one library holds every API an executable speaks).
# CACHE_VARIABLE names PROTO's cache variable and WHAT the API, for the error when PROTO is missing.
function(gpuctk_grpc_api target)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/generated)
  set(gogo_base ${gen}/github.com/gogo/protobuf/gogoproto/gogo)
  add_custom_command(
    OUTPUT ${gogo_base}.pb.cc ${gogo_base}.pb.h
    COMMAND ${GPUCTK_PROTOC} -I${GPUCTK_GOGO_PROTO_ROOT} --cpp_out=${gen} ${GPUCTK_GOGO_PROTO}
    DEPENDS ${GPUCTK_GOGO_PROTO_ROOT}/${GPUCTK_GOGO_PROTO}
    COMMENT "gogo.proto: C++ stubs (protoc)" VERBATIM)
  set(sources ${gogo_base}.pb.cc)
  set(args ${ARGN})
  while(args)
    list(POP_FRONT args proto name cache_variable what)
    if(NOT EXISTS ${proto})
      message(FATAL_ERROR "${cache_variable}: ${proto} does not exist: run scripts/deps.sh plugin (it fetches "
        "Debian's golang-github-kubernetes-kubelet-dev into the test cache) or point it at ${what}")
    endif()
    set(package "")
    if(name MATCHES "^([^=]+)=(.+)$")
      set(name ${CMAKE_MATCH_1})
      set(package ${CMAKE_MATCH_2})
    endif()
    string(REGEX REPLACE "\\.proto$" "" base ${name})
    add_custom_command(
      OUTPUT ${gen}/${name}
      COMMAND ${CMAKE_COMMAND} -DINPUT=${proto} -DOUTPUT=${gen}/${name} -DPACKAGE=${package}
        -P ${PROJECT_SOURCE_DIR}/cmake/gpuctk_proto_copy.cmake
      DEPENDS ${proto} ${PROJECT_SOURCE_DIR}/cmake/gpuctk_proto_copy.cmake
      COMMENT "${name} (${what}, from ${proto})" VERBATIM)
    add_custom_command(
      OUTPUT ${gen}/${base}.pb.cc ${gen}/${base}.pb.h ${gen}/${base}.grpc.pb.cc ${gen}/${base}.grpc.pb.h
      COMMAND ${GPUCTK_PROTOC} -I${gen} -I${GPUCTK_GOGO_PROTO_ROOT} --cpp_out=${gen} ${name}
      COMMAND ${GPUCTK_PROTOC} -I${gen} -I${GPUCTK_GOGO_PROTO_ROOT} --grpc_out=${gen}
        --plugin=protoc-gen-grpc=${GPUCTK_GRPC_CPP_PLUGIN} ${name}
      DEPENDS ${gen}/${name} ${GPUCTK_GOGO_PROTO_ROOT}/${GPUCTK_GOGO_PROTO}
      COMMENT "${what}: C++ and gRPC stubs (protoc, grpc_cpp_plugin)" VERBATIM)
    list(APPEND sources ${gen}/${base}.pb.cc ${gen}/${base}.grpc.pb.cc)
  endwhile()
  # Generated code is compiled without the project's warnings (it is not ours to fix).
  add_library(${target} STATIC ${sources})
  target_include_directories(${target} SYSTEM PUBLIC ${gen})
  target_link_libraries(${target} PRIVATE gpuctk_settings)
  gpuctk_link_grpc(${target})
endfunction()

# gpuctk_link_grpc(TARGET): gRPC C++ and protobuf for TARGET and what links it. With GPUCTK_STATIC_CXX (as
# gpuctk), gRPC, protobuf and abseil are linked from Debian's static archives (the executable adds
# -static-libstdc++): the daemon's resident set is then the code it uses. Shared, each library's relocated
# data and the pages its symbol lookups touch are resident as well: the device plugin is 14.2 MiB after
# 10 000 Allocate calls against 10.0 MiB static (bench/plugin.sh, bench/README.md). The image needs glibc
# only. The archives gRPC's pkg-config files leave out (upb, c-ares, address_sorting, re2) are named here,
# all in one group, as they refer to each other.
function(gpuctk_link_grpc target)
  if(NOT GPUCTK_STATIC_CXX OR GPUCTK_SANITIZE)
    target_link_libraries(${target} PUBLIC PkgConfig::GRPCXX)
    return()
  endif()
  set(archives upb cares address_sorting re2)
  set(system_libraries)
  foreach(library IN LISTS GRPCXX_STATIC_LIBRARIES)
    if(library MATCHES "^(grpc|gpr|absl_|protobuf|upb|cares|address_sorting|re2|z$)")
      list(APPEND archives ${library})
    else()
      list(APPEND system_libraries ${library})  # glibc's (rt, m) and libatomic: shared
    endif()
  endforeach()
  list(REMOVE_DUPLICATES archives)
  list(REMOVE_DUPLICATES system_libraries)
  list(TRANSFORM archives PREPEND "-l:lib")
  list(TRANSFORM archives APPEND ".a")
  target_include_directories(${target} SYSTEM PUBLIC ${GRPCXX_INCLUDE_DIRS})
  target_compile_options(${target} PUBLIC ${GRPCXX_CFLAGS_OTHER})
  target_link_libraries(${target} PUBLIC -Wl,--start-group ${archives} -Wl,--end-group ${system_libraries})
endfunction()
