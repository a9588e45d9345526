#include "util/path.hpp"

#include <algorithm>
#include <filesystem>

namespace gpuctk {

bool is_clean_path(std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return false;
  }
  if (path.size() == 1) {
    return true;
  }
  if (path.back() == '/') {
    return false;
  }
  for (size_t start = 1; start <= path.size();) {
    const auto end = std::min(path.find('/', start), path.size());
    const auto part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return false;
    }
    start = end + 1;
  }
  return true;
}

std::string clean_path(std::string_view path) {
  if (is_clean_path(path)) {
    return std::string(path);
  }
  std::string clean = std::filesystem::path(path).lexically_normal().string();
  if (clean.size() > 1 && clean.back() == '/') {  // lexically_normal leaves at most one
    clean.pop_back();
  }
  return clean;
}

std::string clean_absolute_path(std::string_view path, std::string_view base) {
  std::filesystem::path full(path);
  if (full.is_relative()) {
    full = std::filesystem::path(base) / full;
  }
  return clean_path(full.string());
}

std::string parent_path(std::string_view path) {
  const auto slash = path.rfind('/');
  if (slash == std::string_view::npos) {
    return ".";
  }
  return slash == 0 ? "/" : std::string(path.substr(0, slash));
}

}  // namespace gpuctk
