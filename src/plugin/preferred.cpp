#include "plugin/preferred.hpp"

#include <algorithm>
#include <functional>
#include <map>

#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

// NVIDIA's allocator's points per PCIe path (go-gpuallocator, calculateGPUPairScore), one row per kind.
constexpr std::pair<discover::PciePath, int> k_pcie_scores[] = {
    {discover::PciePath::unknown, 0},         // no link known
    {discover::PciePath::cross_cpu, 10},      // across NUMA nodes
    {discover::PciePath::same_cpu, 20},       // one NUMA node
    {discover::PciePath::host_bridge, 30},    // one host bridge
    {discover::PciePath::multi_switch, 40},   // several PCIe switches
    {discover::PciePath::single_switch, 50},  // one PCIe switch
    {discover::PciePath::same_board, 60},     // one board
};
constexpr int k_nvlink_score = 100;     // per NVLink
constexpr uint32_t k_max_nvlinks = 18;  // the allocator counts at most eighteen

// A GPU of the best-effort search; nullptr is padding.
using Gpu = const Device*;
using Set = std::vector<Gpu>;
using Partition = std::vector<Set>;

class BestEffort {
 public:
  explicit BestEffort(const Links& links) : m_links(links) {}

  int pair_score(Gpu a, Gpu b) const {
    if (a == nullptr || b == nullptr || a == b || a->gpu >= m_links.size() ||
        b->gpu >= m_links[a->gpu].size()) {
      return 0;
    }
    return link_score(m_links[a->gpu][b->gpu]);
  }

  int set_score(const Set& set) const {
    int score = 0;
    for (size_t i = 0; i < set.size(); ++i) {
      for (size_t j = i + 1; j < set.size(); ++j) {
        score += pair_score(set[i], set[j]);
      }
    }
    return score;
  }

  int partition_score(const Partition& partition) const {
    int score = 0;
    for (const auto& set : partition) {
      score += set_score(set);
    }
    return score;
  }

  Set allocate(const Set& available, const Set& required, size_t size) const {
    if (size == 0 || available.size() < size || required.size() > size ||
        required.size() > available.size()) {
      return {};
    }
    std::optional<Partition> best;
    int best_score = 0;
    each_partition(available, size, [&](const Partition& candidate) {
      if (!has_full_set_with(candidate, required)) {
        return;
      }
      const int score = partition_score(candidate);
      if (!best || score > best_score) {
        best = candidate;
        best_score = score;
      }
    });
    if (!best) {
      return {};
    }
    // `chosen` points into `best`, which outlives it (never into a temporary copy of it).
    const Set* chosen = nullptr;
    int chosen_score = 0;
    for (const auto& set : *best) {
      if (contains_all(set, required) && (chosen == nullptr || set_score(set) > chosen_score)) {
        chosen = &set;
        chosen_score = set_score(set);
      }
    }
    if (chosen == nullptr) {
      return {};
    }
    Set out;
    for (Gpu gpu : *chosen) {
      if (gpu != nullptr) {  // NVIDIA's would answer padding (and fail on it); its GPUs are the answer
        out.push_back(gpu);
      }
    }
    return out;
  }

 private:
  static bool contains_all(const Set& set, const Set& subset) {
    return std::ranges::all_of(subset, [&](Gpu gpu) { return std::ranges::find(set, gpu) != set.end(); });
  }
  static size_t padding(const Set& set) { return static_cast<size_t>(std::ranges::count(set, nullptr)); }

  static bool has_full_set_with(const Partition& partition, const Set& required) {
    return std::ranges::any_of(
        partition, [&](const Set& set) { return contains_all(set, required) && padding(set) == 0; });
  }

  // Every set of `size` of `devices`, in lexicographic order of positions.
  static void each_set(const Set& devices, size_t size, const std::function<void(const Set&)>& visit) {
    if (size == 0 || size > devices.size()) {
      return;
    }
    std::vector<size_t> at(size);
    for (size_t i = 0; i < size; ++i) {
      at[i] = i;
    }
    Set set(size);
    for (;;) {
      for (size_t i = 0; i < size; ++i) {
        set[i] = devices[at[i]];
      }
      visit(set);
      size_t level = size;
      while (level > 0 && at[level - 1] == devices.size() - size + level - 1) {
        --level;
      }
      if (level == 0) {
        return;
      }
      ++at[level - 1];
      for (size_t i = level; i < size; ++i) {
        at[i] = at[i - 1] + 1;
      }
    }
  }

  // Every partition of `devices` (padded to a multiple of `size`) into sets of `size`, each set's first
  // device in increasing position, sets holding no padding or all of it (go-gpuallocator's order).
  static void each_partition(const Set& devices, size_t size,
                             const std::function<void(const Partition&)>& visit) {
    if (size == 1) {
      for (Gpu gpu : devices) {
        visit(Partition{{gpu}});
      }
      return;
    }
    Set padded = devices;
    while (padded.size() % size != 0) {
      padded.push_back(nullptr);
    }
    const size_t total_padding = padding(padded);
    Partition accum;
    std::function<void(const Set&)> iterate = [&](const Set& rest) {
      if (rest.size() == size) {
        accum.push_back(rest);
        visit(accum);
        accum.pop_back();
        return;
      }
      each_set(Set(rest.begin() + 1, rest.end()), size - 1, [&](const Set& tail) {
        Set set{rest.front()};
        set.insert(set.end(), tail.begin(), tail.end());
        const size_t p = padding(set);
        if (p != 0 && p != total_padding) {
          return;
        }
        Set remaining;
        for (Gpu gpu : rest) {
          if (std::ranges::find(set, gpu) == set.end()) {
            remaining.push_back(gpu);
          }
        }
        accum.push_back(std::move(set));
        iterate(remaining);
        accum.pop_back();
      });
    };
    iterate(padded);
  }

  const Links& m_links;
};

std::vector<std::string> greedy(const Resource& resource, const std::vector<const Device*>& candidates_in,
                                const std::vector<std::string>& required, size_t needed,
                                AllocationPolicy policy) {
  struct Count {
    int total = 0;
    int available = 0;
    [[nodiscard]] int allocated() const { return total - available; }
  };
  std::map<std::string, Count> counts;  // by GPU (MIG device) UUID
  for (const Device* d : candidates_in) {
    ++counts[d->uuid].available;
  }
  for (const auto& d : resource.devices) {
    if (const auto it = counts.find(d.uuid); it != counts.end()) {
      ++it->second.total;
    }
  }
  std::map<std::string, int> picked;
  std::vector<const Device*> candidates = candidates_in;
  std::vector<std::string> out = required;
  for (size_t n = 0; n < needed; ++n) {
    std::ranges::stable_sort(candidates, [&](const Device* a, const Device* b) {
      const int ia = counts[a->uuid].allocated();
      const int ib = counts[b->uuid].allocated();
      if (ia != ib) {
        return policy == AllocationPolicy::distributed ? ia < ib : ia > ib;
      }
      return picked[a->uuid] < picked[b->uuid];
    });
    const Device* chosen = candidates.front();
    ++picked[chosen->uuid];
    --counts[chosen->uuid].available;
    out.push_back(chosen->id);
    candidates.erase(candidates.begin());
  }
  return out;
}

}  // namespace

int link_score(const discover::GpuLink& link) {
  int score = std::min(link.nvlinks, k_max_nvlinks) * k_nvlink_score;
  for (const auto& [path, points] : k_pcie_scores) {
    if (path == link.pcie) {
      score += points;
    }
  }
  return score;
}

Result<std::vector<std::string>> preferred_allocation(const Resource& resource, const Links& links,
                                                      AllocationPolicy policy,
                                                      std::span<const std::string> available,
                                                      std::span<const std::string> required, int size) {
  std::map<std::string_view, const Device*> by_id;
  for (const auto& d : resource.devices) {
    by_id.emplace(d.id, &d);
  }
  const auto lookup = [&](std::span<const std::string> ids) -> Result<std::vector<const Device*>> {
    std::vector<const Device*> out;
    for (const auto& id : ids) {
      const auto it = by_id.find(id);
      if (it == by_id.end()) {
        return fail("unknown device: " + quote(id));
      }
      out.push_back(it->second);
    }
    return out;
  };
  GPUCTK_TRY_ASSIGN(const auto available_devices, lookup(available));
  GPUCTK_TRY_ASSIGN(const auto required_devices, lookup(required));
  const bool aligned =
      std::ranges::none_of(resource.devices, &Device::is_mig) &&
      std::ranges::none_of(available_devices, [](const Device* d) { return d->replicas > 0; });
  if (aligned) {
    const Set chosen =
        BestEffort(links).allocate(available_devices, required_devices, size < 0 ? 0 : size_t(size));
    std::vector<std::string> out;
    for (Gpu gpu : chosen) {
      out.push_back(gpu->id);
    }
    return out;
  }
  std::vector<const Device*> candidates;
  for (const Device* d : available_devices) {
    if (std::ranges::find(required_devices, d) == required_devices.end()) {
      candidates.push_back(d);
    }
  }
  const auto needed = size - static_cast<int>(required.size());
  if (needed < 0 || candidates.size() < static_cast<size_t>(needed)) {
    return fail("not enough available devices to satisfy allocation");
  }
  return greedy(resource, candidates, std::vector<std::string>(required.begin(), required.end()),
                static_cast<size_t>(needed), policy);
}

}  // namespace gpuctk::plugin
