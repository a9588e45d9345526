#include "inject/capability_filter.hpp"

#include <string>
#include <utility>
#include <vector>

#include "cdi/hook_args.hpp"
#include "discover/driver_files.hpp"
#include "util/path.hpp"

namespace gpuctk::inject {

void CapabilityFilter::apply(cdi::ContainerEdits& edits) {
  if (m_caps == discover::CapabilitySet::all()) {
    return;
  }
  std::erase_if(edits.mounts, [&](const cdi::Mount& m) {
    const auto need = discover::file_need(m.container_path);
    bool keep = false;
    switch (need.kind) {
      case discover::FileNeed::Kind::always:
        keep = true;
        break;
      case discover::FileNeed::Kind::unknown:
        keep = false;
        break;
      case discover::FileNeed::Kind::capability:
        keep = m_caps.has(need.capability) && (!need.is_32bit || m_caps.has(discover::Capability::compat32));
        break;
    }
    if (!keep) {
      m_dropped.insert(m.container_path);
    }
    return !keep;
  });
  std::vector<cdi::Hook> kept;
  for (auto& hook : edits.hooks) {
    if (filter_hook(hook)) {
      kept.push_back(std::move(hook));
    }
  }
  edits.hooks = std::move(kept);
}

// gpuctk's two lines that carry links, edited as their structs (cdi/hook_args.hpp); a hook that is neither
// (or does not parse as one: another tool's) passes untouched.
bool CapabilityFilter::filter_hook(cdi::Hook& hook) {
  const auto argv0 = hook.args.empty() ? std::string() : hook.args.front();
  if (auto start = cdi::ContainerStartArgs::parse(hook.args)) {
    drop_links(start->links);
    std::erase_if(start->ld_cache_entries, [&](const std::string& entry) {
      return m_dropped.contains(cdi::ld_cache_entry_path(entry));
    });
    hook.args = start->to_args();
    hook.args.front() = argv0;
    return !start->empty();
  }
  if (auto links = cdi::CreateSymlinksArgs::parse(hook.args)) {
    drop_links(links->links);
    hook.args = links->to_args();
    hook.args.front() = argv0;
    return !links->links.empty();
  }
  return true;
}

// A link whose target is a dropped file, directly or through other dropped links, goes too.
void CapabilityFilter::drop_links(std::vector<cdi::HookLink>& hook_links) {
  struct Link {
    std::string target;  // resolved against the link's directory
    std::string path;
  };
  std::vector<Link> links;
  links.reserve(hook_links.size());
  for (const auto& hook_link : hook_links) {
    std::string link = clean_path(hook_link.link);
    const auto& target = hook_link.target;
    // Lexically, as the kernel reads a link's target: gbm/nvidia-drm_gbm.so -> ../libnvidia-allocator.so.1
    // is the allocator library in the directory above.
    links.push_back(
        {clean_path(target.starts_with("/") ? target : link.substr(0, link.rfind('/') + 1) + target), link});
  }
  // Each pass is linear; passes stop when nothing new was dropped (at most the length of a link chain).
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& link : links) {
      if (m_dropped.contains(link.target) && m_dropped.insert(link.path).second) {
        grew = true;
      }
    }
  }
  std::vector<cdi::HookLink> kept;
  for (size_t i = 0; i < links.size(); ++i) {
    if (!m_dropped.contains(links[i].target)) {
      kept.push_back(std::move(hook_links[i]));
    }
  }
  hook_links = std::move(kept);
}

}  // namespace gpuctk::inject
