#pragma once
// What the vendor label files (nvidia.cpp, amd.cpp, intel.cpp) share; not part of the labels API.

#include <cstdint>
#include <string>
#include <string_view>

namespace gpuctk::labels {

constexpr uint64_t k_mib = 1024ull * 1024ull;

// Four lower-case hex digits, as sysfs and NFD spell PCI ids: 0x74a1 -> "74a1".
inline std::string hex4(uint32_t value) {
  constexpr std::string_view digits = "0123456789abcdef";
  std::string out(4, '0');
  for (int i = 3; i >= 0; --i) {
    out[static_cast<size_t>(i)] = digits[value & 0xf];
    value >>= 4;
  }
  return out;
}

}  // namespace gpuctk::labels
