#pragma once
// Where the dynamic loaders of a root (the host's or an image's) keep their configuration and cache, and
// the files gpuctk adds there: each path defined here once, for every reader and writer of them.

namespace gpuctk::ldcache {

// glibc's linker cache, and the configuration its ldconfig reads.
inline constexpr const char* k_ld_cache = "/etc/ld.so.cache";
inline constexpr const char* k_ld_so_conf = "/etc/ld.so.conf";
inline constexpr const char* k_ld_conf_dir = "/etc/ld.so.conf.d";
// What update_ld_cache writes as /etc/ld.so.conf when the image has none.
inline constexpr const char* k_ld_so_conf_text = "include /etc/ld.so.conf.d/*.conf\n";

// gpuctk's drop-ins in k_ld_conf_dir. Their names sort before the image's own files, so their folders
// come first: a driver library wins over an image's copy of the same SONAME in another folder.
// The driver's folders the image does not configure (update_ld_cache).
inline constexpr const char* k_ld_conf_dropin = "/etc/ld.so.conf.d/00-gpuctk-driver.conf";
// The image's CUDA forward-compat folder (enable-cuda-compat, steps/cuda_compat.hpp): it must win over
// the driver's, so it sorts before it. An image that has it is left to ldconfig (merge_ld_cache).
inline constexpr const char* k_cuda_compat_dropin = "/etc/ld.so.conf.d/00-gpuctk-compat.conf";
// The drop-in older gpuctk releases wrote with the image's system folders; removed when found (its
// folders came before lines and files the image's configuration has after the drop-ins).
inline constexpr const char* k_ld_conf_system_dropin = "/etc/ld.so.conf.d/zz-gpuctk-system.conf";

// The loaders that tell which C library an image's programs use, and musl's path file (musl's loader
// reads <its directory>/../etc/ld-musl-<arch>.path, so /etc's for the standard /lib/ld-musl-<arch>.so.1).
#if defined(__aarch64__)
inline constexpr const char* k_glibc_loader = "/lib/ld-linux-aarch64.so.1";
inline constexpr const char* k_musl_loader = "/lib/ld-musl-aarch64.so.1";
inline constexpr const char* k_musl_path_file = "/etc/ld-musl-aarch64.path";
#else
inline constexpr const char* k_glibc_loader = "/lib64/ld-linux-x86-64.so.2";
inline constexpr const char* k_musl_loader = "/lib/ld-musl-x86_64.so.1";
inline constexpr const char* k_musl_path_file = "/etc/ld-musl-x86_64.path";
#endif
// What musl searches when it has no path file.
inline constexpr const char* k_musl_default_path = "/lib:/usr/local/lib:/usr/lib";

}  // namespace gpuctk::ldcache
