# gpuctk_write_if_changed(PATH CONTENT): writes CONTENT to PATH only when PATH is missing or holds other
# bytes, so the file's time changes only with its content and nothing built from it is rebuilt for
# nothing. One copy for configure time (packaging/CMakeLists.txt) and script mode (cmake/gpuctk_commit.cmake).
function(gpuctk_write_if_changed path content)
  set(old "")
  if(EXISTS "${path}")
    file(READ "${path}" old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE "${path}" "${content}")
  endif()
endfunction()
