#pragma once
// Kubernetes' name syntax (k8s.io/apimachinery's validation), one copy for every module that checks a
// name Kubernetes will read: node label prefixes (labels), the device plugin's resource names
// (labels/sharing_config), CDI annotation key prefixes (cdi/validate, which lower-cases the key first,
// as Kubernetes' ValidateAnnotations does).

#include <algorithm>
#include <cstddef>
#include <string_view>

#include "util/strings.hpp"

namespace gpuctk {

// Longest DNS-1123 subdomain.
constexpr size_t k_max_dns_subdomain = 253;

// Whether `name` is a DNS-1123 subdomain: at most 253 characters of dot-separated labels, each of
// [a-z0-9-] beginning and ending with a letter or digit ("nvidia.com"; not "", "Nvidia.com", "a..b",
// "a." or "-a.b").
inline bool is_dns_subdomain(std::string_view name) {
  if (name.empty() || name.size() > k_max_dns_subdomain) {
    return false;
  }
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  return std::ranges::all_of(split(name, '.'), [&](std::string_view label) {
    return !label.empty() && alnum(label.front()) && alnum(label.back()) &&
           std::ranges::all_of(label, [&](char c) { return alnum(c) || c == '-'; });
  });
}

}  // namespace gpuctk
