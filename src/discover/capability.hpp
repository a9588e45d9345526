#pragma once
// Driver capabilities (NVIDIA_DRIVER_CAPABILITIES) and the one table that maps every driver library and
// binary to the capability that needs it. The hook uses it to mount only what a container asked for; the
// CDI generator mounts everything and records nothing per capability.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::discover {

enum class Capability : uint8_t {
  utility,   // nvidia-smi, NVML
  compute,   // CUDA, OpenCL
  video,     // NVENC / NVDEC / VDPAU
  graphics,  // OpenGL, Vulkan, EGL
  display,   // X.Org driver modules
  ngx,       // NGX (DLSS)
  compat32,  // 32-bit libraries of the other capabilities
};

// A set of capabilities, as a bit mask.
class CapabilitySet {
 public:
  constexpr CapabilitySet() = default;
  static constexpr CapabilitySet all() { return CapabilitySet(0x7f); }
  constexpr void add(Capability c) { m_bits = static_cast<uint8_t>(m_bits | bit(c)); }
  [[nodiscard]] constexpr bool has(Capability c) const { return (m_bits & bit(c)) != 0; }
  [[nodiscard]] constexpr bool empty() const { return m_bits == 0; }
  constexpr bool operator==(const CapabilitySet&) const = default;

 private:
  constexpr explicit CapabilitySet(uint8_t bits) : m_bits(bits) {}
  static constexpr uint8_t bit(Capability c) { return static_cast<uint8_t>(1u << static_cast<unsigned>(c)); }
  uint8_t m_bits = 0;
};

// "utility", "compute", ...
std::string_view capability_name(Capability capability);

// Parses a NVIDIA_DRIVER_CAPABILITIES value: a comma list of capability names, or "all". Spaces around
// names are ignored; an empty list is an empty set. Unknown name -> error naming it.
Result<CapabilitySet> parse_capabilities(std::string_view list);

// The capability that needs the library whose file name is `file_name` (e.g. "libcuda.so.550.54.15"),
// by prefix match on the library table; nothing for a library the table does not know.
std::optional<Capability> library_capability(std::string_view file_name);

// The capability that needs the driver binary `name` (e.g. "nvidia-smi"); nothing if unknown.
std::optional<Capability> binary_capability(std::string_view name);

// Whether the driver binary `name` is optional (IMEX, a component of its own; nvidia-debugdump, which Debian
// does not package): discovery does not warn when such a binary is absent, since nothing is wrong with a
// host that lacks it.
bool binary_is_optional(std::string_view name);

// The names of the driver binaries discovery looks for, in table order.
std::vector<std::string_view> known_binaries();

}  // namespace gpuctk::discover
