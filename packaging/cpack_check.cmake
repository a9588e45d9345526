# Read by cpack before it packages (CPACK_PROJECT_CONFIG_FILE, packaging/CMakeLists.txt): a .deb installs
# under /usr, and its binary, config and hooks name the install prefix the tree was configured with, so a
# tree configured for any other prefix (CMake's default is /usr/local) would make a package whose hooks
# run a binary that is not there. The reason goes out as one line (NOTICE is not wrapped; an error is).
if(NOT CPACK_GPUCTK_INSTALL_PREFIX STREQUAL "/usr")
  message(NOTICE "gpuctk: error: package: this tree is configured with CMAKE_INSTALL_PREFIX="
    "${CPACK_GPUCTK_INSTALL_PREFIX}; a .deb is made only from a tree configured with "
    "-DCMAKE_INSTALL_PREFIX=/usr (its binary, config and hooks name that prefix)")
  message(FATAL_ERROR "no package of a tree whose prefix is not /usr")
endif()
