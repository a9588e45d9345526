#pragma once
// libcurl, loaded (dlopen of libcurl.so.4) when the first Client is made rather than linked: a daemon that
// never talks to the API server (gpuctk-device-plugin without per-node configs, its default) maps none of
// libcurl's ~30 libraries (OpenSSL, GnuTLS, Kerberos, ...), whose relocated data and constructors cost
// about 5 MiB resident and as many milliseconds at each start (bench/plugin.sh). The symbols' types are
// curl.h's own (decltype), so a changed signature does not compile; the library is never unloaded.
// curl_easy_setopt and curl_easy_getinfo are variadic: through these pointers curl.h's compile-time type
// check of their values (typecheck-gcc.h) does not apply, so callers pass exactly the documented type
// (long, curl_off_t, a pointer).

#include <curl/curl.h>

#include "util/error.hpp"

namespace gpuctk::kube {

struct CurlLibrary {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_version_info) version_info = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_easy_escape) easy_escape = nullptr;
  decltype(&::curl_free) free = nullptr;
  decltype(&::curl_multi_init) multi_init = nullptr;
  decltype(&::curl_multi_cleanup) multi_cleanup = nullptr;
  decltype(&::curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&::curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&::curl_multi_perform) multi_perform = nullptr;
  decltype(&::curl_multi_poll) multi_poll = nullptr;
  decltype(&::curl_multi_info_read) multi_info_read = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
};

// libcurl.so.4, loaded and curl_global_init'ed once (thread-safe); every later call answers the same.
// Errors: "libcurl: libcurl.so.4: cannot open shared object file: No such file or directory",
// "libcurl: libcurl.so.4 has no curl_multi_poll (libcurl 7.66 or newer is needed)".
Result<const CurlLibrary*> load_curl();

// The loaded library; only after load_curl() succeeded (a Client exists only then).
const CurlLibrary& curl();

// "libcurl 7.88.1", or why it does not load.
std::string curl_version();

}  // namespace gpuctk::kube
