# gpuctk_replace_one(VAR WHERE REGEX REPLACEMENT): VAR's text with the one match of REGEX replaced; none
# or several is a fatal error naming WHERE (a file made from another must change in exactly the place
# meant). One copy for configure time (packaging/CMakeLists.txt's substituted files) and script mode
# (packaging/deb_installed_size.cmake, the .deb's control file).
function(gpuctk_replace_one var where regex replacement)
  string(REGEX MATCHALL "${regex}" matches "${${var}}")
  list(LENGTH matches count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "${where}: expected one match of '${regex}', found ${count}")
  endif()
  string(REGEX REPLACE "${regex}" "${replacement}" replaced "${${var}}")
  set(${var} "${replaced}" PARENT_SCOPE)
endfunction()
