#include "kube/curl_library.hpp"

#include <dlfcn.h>

#include <mutex>
#include <optional>
#include <string>

namespace gpuctk::kube {

namespace {

constexpr const char* k_soname = "libcurl.so.4";

CurlLibrary g_library;
std::optional<Result<const CurlLibrary*>> g_loaded;  // set once, under g_once
std::once_flag g_once;

template <class Pointer>
Result<void> bind(void* handle, const char* name, Pointer& out) {
  void* symbol = ::dlsym(handle, name);
  if (symbol == nullptr) {
    return fail(std::string("libcurl: ") + k_soname + " has no " + name +
                " (libcurl 7.66 or newer is needed)");
  }
  out = reinterpret_cast<Pointer>(symbol);
  return {};
}

Result<const CurlLibrary*> open_library() {
  // RTLD_NODELETE: never unloaded, so the pointers stay valid for the process's life.
  void* handle = ::dlopen(k_soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return fail(std::string("libcurl: ") + (why != nullptr ? why : k_soname));
  }
  CurlLibrary& l = g_library;
  GPUCTK_TRY(bind(handle, "curl_global_init", l.global_init));
  GPUCTK_TRY(bind(handle, "curl_version_info", l.version_info));
  GPUCTK_TRY(bind(handle, "curl_easy_init", l.easy_init));
  GPUCTK_TRY(bind(handle, "curl_easy_cleanup", l.easy_cleanup));
  GPUCTK_TRY(bind(handle, "curl_easy_reset", l.easy_reset));
  GPUCTK_TRY(bind(handle, "curl_easy_setopt", l.easy_setopt));
  GPUCTK_TRY(bind(handle, "curl_easy_getinfo", l.easy_getinfo));
  GPUCTK_TRY(bind(handle, "curl_easy_strerror", l.easy_strerror));
  GPUCTK_TRY(bind(handle, "curl_easy_escape", l.easy_escape));
  GPUCTK_TRY(bind(handle, "curl_free", l.free));
  GPUCTK_TRY(bind(handle, "curl_multi_init", l.multi_init));
  GPUCTK_TRY(bind(handle, "curl_multi_cleanup", l.multi_cleanup));
  GPUCTK_TRY(bind(handle, "curl_multi_add_handle", l.multi_add_handle));
  GPUCTK_TRY(bind(handle, "curl_multi_remove_handle", l.multi_remove_handle));
  GPUCTK_TRY(bind(handle, "curl_multi_perform", l.multi_perform));
  GPUCTK_TRY(bind(handle, "curl_multi_poll", l.multi_poll));
  GPUCTK_TRY(bind(handle, "curl_multi_info_read", l.multi_info_read));
  GPUCTK_TRY(bind(handle, "curl_slist_append", l.slist_append));
  GPUCTK_TRY(bind(handle, "curl_slist_free_all", l.slist_free_all));
  if (const CURLcode code = l.global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
    return fail(std::string("libcurl: curl_global_init: ") + l.easy_strerror(code));
  }
  return &g_library;
}

}  // namespace

Result<const CurlLibrary*> load_curl() {
  std::call_once(g_once, [] { g_loaded = open_library(); });
  return *g_loaded;
}

const CurlLibrary& curl() {
  return g_library;
}

std::string curl_version() {
  auto loaded = load_curl();
  if (!loaded) {
    return loaded.error().message;
  }
  const curl_version_info_data* info = (*loaded)->version_info(CURLVERSION_NOW);
  return std::string("libcurl ") + (info != nullptr && info->version != nullptr ? info->version : "?");
}

}  // namespace gpuctk::kube
