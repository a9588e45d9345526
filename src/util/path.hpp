#pragma once
// Lexical path cleaning (no filesystem access), as CDI and OCI compare and order paths.

#include <string>
#include <string_view>

namespace gpuctk {

// Whether `path` is already what clean_path makes of it: absolute, no empty, "." or ".." component, no
// trailing slash. Spec and config paths nearly always are, and checking is far cheaper than cleaning.
bool is_clean_path(std::string_view path);

// `path` cleaned lexically: no "//", "." or "dir/.." components, no trailing "/" (except for "/").
std::string clean_path(std::string_view path);

// `path`, made absolute against `base` when it is relative, then cleaned.
std::string clean_absolute_path(std::string_view path, std::string_view base);

// The directory part of `path`, lexically: "/a/b" -> "/a", "/a" -> "/", "a/b" -> "a", "a" -> ".".
std::string parent_path(std::string_view path);

}  // namespace gpuctk
