#include "hook/capability_filter.hpp"

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cdi/spec_builder.hpp"
#include "discover/driver_files.hpp"
#include "hook/ld_cache_merge.hpp"
#include "util/path.hpp"

namespace gpuctk::hook {

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
  for (auto& hook : edits.hooks) {
    if (cdi::is_create_symlinks_hook(hook)) {
      drop_links(hook);
    }
  }
  std::erase_if(edits.hooks,
                [](const cdi::Hook& h) { return cdi::is_create_symlinks_hook(h) && h.args.size() == 3; });
}

// A create-symlinks hook's "--link <target>::<link>" pairs (from args[3]); a link whose target is a
// dropped file, directly or through other dropped links, goes too, and so does a container-start hook's
// "--ld-cache-entry" for a dropped file or link (the merge would find nothing there anyway).
void CapabilityFilter::drop_links(cdi::Hook& hook) {
  struct Link {
    size_t index;        // of the "<target>::<link>" argument
    std::string target;  // resolved against the link's directory
    std::string path;
  };
  std::vector<Link> links;
  std::vector<std::pair<size_t, std::string>> entries;  // index of each --ld-cache-entry value, its path
  for (size_t i = 3; i + 1 < hook.args.size(); i += 2) {
    const auto& pair = hook.args[i + 1];
    if (hook.args[i] == "--ld-cache-entry") {
      // Its path as the hook reads it (hook/ld_cache_merge.hpp); a value the hook would refuse names none.
      auto facts = parse_ld_cache_facts({pair});
      entries.emplace_back(i + 1, facts && !facts->empty() ? facts->front().path : std::string());
      continue;
    }
    const auto sep = pair.find("::");
    if (sep == std::string::npos) {
      continue;
    }
    std::string link = clean_path(pair.substr(sep + 2));
    std::string target = pair.substr(0, sep);
    // Lexically, as the kernel reads a link's target: gbm/nvidia-drm_gbm.so -> ../libnvidia-allocator.so.1
    // is the allocator library in the directory above.
    target = clean_path(target.starts_with("/") ? target : link.substr(0, link.rfind('/') + 1) + target);
    links.push_back({i + 1, std::move(target), std::move(link)});
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
  std::unordered_set<size_t> removed;
  for (const auto& link : links) {
    if (m_dropped.contains(link.target)) {
      removed.insert(link.index);
    }
  }
  for (const auto& [index, path] : entries) {
    if (m_dropped.contains(path)) {
      removed.insert(index);
    }
  }
  std::vector<std::string> kept;
  kept.reserve(hook.args.size());
  for (size_t i = 0; i < hook.args.size(); ++i) {
    if (i >= 3 && removed.contains(i + 1)) {
      ++i;  // the "--link" or "--ld-cache-entry" flag and its value
      continue;
    }
    kept.push_back(std::move(hook.args[i]));
  }
  hook.args = std::move(kept);
}

}  // namespace gpuctk::hook
