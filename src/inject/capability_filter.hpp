#pragma once
// NVIDIA_DRIVER_CAPABILITIES at injection (inject/inject.cpp): the driver files a container's capabilities
// do not need are left out of its edits.

#include <set>
#include <string>
#include <vector>

#include "cdi/hook_args.hpp"
#include "cdi/spec.hpp"
#include "discover/capability.hpp"

namespace gpuctk::inject {

// Drops the driver files that the requested capabilities do not need, and the links into dropped files.
// Only for the edits of the default kind's spec (the one gpuctk generates): discover::file_need knows
// NVIDIA's driver files and calls everything else unknown, so another vendor's spec (a NIC requested by
// a cdi.k8s.io/ annotation) must pass untouched or it would be applied without its files.
class CapabilityFilter {
 public:
  explicit CapabilityFilter(const discover::CapabilitySet& caps) : m_caps(caps) {}

  // With every capability: nothing. Otherwise removes from `edits` each mount whose file
  // discover::file_need says is not needed (unknown files included, 32-bit ones without compat32), each
  // create-symlinks "--link <target>::<link>" pair whose target was dropped (in this call or an earlier
  // one, through any chain of links), and each create-symlinks hook left with no link.
  void apply(cdi::ContainerEdits& edits);

 private:
  // False: the hook is left with nothing to do.
  bool filter_hook(cdi::Hook& hook);
  void drop_links(std::vector<cdi::HookLink>& links);

  discover::CapabilitySet m_caps;
  std::set<std::string> m_dropped;  // across calls: a device's link may lead to a spec-wide file
};

}  // namespace gpuctk::inject
