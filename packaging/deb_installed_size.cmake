# Run by cpack after it made the .deb (CPACK_POST_BUILD_SCRIPTS, packaging/CMakeLists.txt): sets the
# control file's Installed-Size to what the package's files take once installed. CPack 3.25 sums the
# staged files' sizes following symlinks, so the binary's two links (gpuctk-runtime, the docker hook
# link) count the binary three times: 16228 KiB for files that take 5447. The size is dpkg-gencontrol's
# (deb-substvars(5), Installed-Size) over the package's data as CPack wrote it (stripped,
# CPACK_STRIP_FILES): each regular file and symlink ceil(size / 1024) KiB, a symlink's size the length of
# its target, every other object (a directory, the root included) 1 KiB. CPack makes no hard links.
# Only the control member changes; the data member is CPack's, byte for byte. tests/package/deb.sh checks
# the field against the same rule.
include(${CMAKE_CURRENT_LIST_DIR}/../cmake/gpuctk_replace_one.cmake)
foreach(tool dpkg-deb ar tar gzip)
  string(REPLACE "-" "_" var "${tool}")
  find_program(GPUCTK_${var} ${tool} REQUIRED)
endforeach()

# gpuctk_installed_kib(<var> <dir>): dpkg-gencontrol's Installed-Size of the tree <dir>, in KiB.
function(gpuctk_installed_kib out dir)
  file(GLOB_RECURSE entries LIST_DIRECTORIES true "${dir}/*")
  set(kib 1)  # the root directory
  foreach(entry IN LISTS entries)
    if(IS_SYMLINK "${entry}")
      file(READ_SYMLINK "${entry}" target)
      string(LENGTH "${target}" size)
    elseif(IS_DIRECTORY "${entry}")
      math(EXPR kib "${kib} + 1")
      continue()
    else()
      file(SIZE "${entry}" size)
    endif()
    math(EXPR kib "${kib} + (${size} + 1023) / 1024")
  endforeach()
  set(${out} ${kib} PARENT_SCOPE)
endfunction()

foreach(package IN LISTS CPACK_PACKAGE_FILES)
  if(NOT package MATCHES "\\.deb$")
    continue()
  endif()
  set(work "${CPACK_TOPLEVEL_DIRECTORY}/installed-size")
  file(REMOVE_RECURSE "${work}")
  file(MAKE_DIRECTORY "${work}/data" "${work}/control")
  execute_process(COMMAND ${GPUCTK_dpkg_deb} -x "${package}" "${work}/data" COMMAND_ERROR_IS_FATAL ANY)
  gpuctk_installed_kib(kib "${work}/data")

  # The control member, its entries in CPack's order, owned by root as CPack writes them.
  execute_process(COMMAND ${GPUCTK_ar} t "${package}" OUTPUT_VARIABLE members COMMAND_ERROR_IS_FATAL ANY)
  if(NOT members MATCHES "^debian-binary\ncontrol\\.tar\\.gz\n")
    message(FATAL_ERROR "${package}: members are not debian-binary, control.tar.gz, ...: ${members}")
  endif()
  execute_process(COMMAND ${GPUCTK_ar} x "${package}" control.tar.gz WORKING_DIRECTORY "${work}"
    COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND ${GPUCTK_tar} -tzf "${work}/control.tar.gz" OUTPUT_VARIABLE entries
    OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  string(REPLACE "\n" ";" entries "${entries}")
  execute_process(COMMAND ${GPUCTK_tar} -xpzf "${work}/control.tar.gz" -C "${work}/control"
    COMMAND_ERROR_IS_FATAL ANY)
  file(READ "${work}/control/control" control)
  gpuctk_replace_one(control "${package}: control" "\nInstalled-Size: [0-9]+\n" "\nInstalled-Size: ${kib}\n")
  file(WRITE "${work}/control/control" "${control}")
  file(REMOVE "${work}/control.tar.gz")
  execute_process(COMMAND ${GPUCTK_tar} --owner=root:0 --group=root:0 -cf "${work}/control.tar" ${entries}
    WORKING_DIRECTORY "${work}/control" COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND ${GPUCTK_gzip} -9n "${work}/control.tar" COMMAND_ERROR_IS_FATAL ANY)
  # Replaced in place: ar keeps the member's position (dpkg wants debian-binary, control, data).
  execute_process(COMMAND ${GPUCTK_ar} rD "${package}" control.tar.gz WORKING_DIRECTORY "${work}"
    COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE "${work}")
  message(STATUS "gpuctk: ${package}: Installed-Size ${kib} KiB")
endforeach()
