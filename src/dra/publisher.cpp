// Publisher (publisher.hpp): one thread that lists, compares, writes and watches this node's slices.

#include "dra/publisher.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "dra/slices.hpp"
#include "util/strings.hpp"

namespace gpuctk::dra {
namespace {

constexpr std::string_view k_collection = "/apis/resource.k8s.io/v1/resourceslices";
constexpr std::chrono::seconds k_first_backoff{1};
constexpr std::chrono::seconds k_max_backoff{30};
constexpr std::chrono::milliseconds k_poll{200};

std::string api_error(const kube::ApiError& error) {
  return error.message;
}

int64_t generation_of(const nlohmann::json& slice) {
  const auto* pool = slice.contains("spec") ? &slice["spec"] : nullptr;
  if (pool == nullptr || !pool->contains("pool")) {
    return 0;
  }
  const auto& generation = (*pool)["pool"].value("generation", nlohmann::json(0));
  return generation.is_number_integer() ? generation.get<int64_t>() : 0;
}

class SlicePublisher final : public Publisher {
 public:
  SlicePublisher(kube::Client client, std::string node, std::function<Inputs()> current,
                 std::function<void(const std::string&)> log)
      : m_client(std::move(client)),
        m_node(std::move(node)),
        m_current(std::move(current)),
        m_log(std::move(log)) {}
  SlicePublisher(const SlicePublisher&) = delete;
  SlicePublisher& operator=(const SlicePublisher&) = delete;
  ~SlicePublisher() override { stop(); }

  void begin() {
    m_thread = std::thread([this] { run(); });
  }

  void poke() override {
    m_poked = true;
    m_wake.notify_all();
  }

  void stop() override {
    m_stopping = true;
    m_wake.notify_all();
    if (m_thread.joinable()) {
      m_thread.join();
    }
  }

 private:
  // "?fieldSelector=spec.nodeName%3D<node>%2Cspec.driver%3Dgpu.nvidia.com"
  [[nodiscard]] std::string selector() const {
    return "fieldSelector=spec.nodeName%3D" + m_node + "%2Cspec.driver%3D" + std::string(k_driver_name);
  }

  kube::ApiResult<nlohmann::json> list() {
    return m_client.get(std::string(k_collection) + "?" + selector());
  }

  // The Node's UID, for the slices' owner reference (read once).
  Result<void> learn_node() {
    if (!m_node_uid.empty()) {
      return {};
    }
    auto node = m_client.get("/api/v1/nodes/" + m_node);
    if (!node) {
      return fail("get node " + m_node + ": " + api_error(node.error()));
    }
    m_node_uid = node->value("metadata", nlohmann::json::object()).value("uid", "");
    if (m_node_uid.empty()) {
      return fail("node " + m_node + " has no metadata.uid");
    }
    return {};
  }

  // One comparison, and the writes it needs. The collection's version after them, for the watch.
  Result<std::string> sync() {
    GPUCTK_TRY(learn_node());
    auto listed = list();
    if (!listed) {
      return fail("list resourceslices: " + api_error(listed.error()));
    }
    std::map<std::string, nlohmann::json> existing;
    for (const auto& item : listed->value("items", nlohmann::json::array())) {
      existing[item["metadata"].value("name", "")] = item;
      m_generation = std::max(m_generation, generation_of(item));
    }
    const Inputs inputs = m_current();
    Pool pool{.node_name = m_node, .node_uid = m_node_uid, .generation = m_generation};
    auto wanted = build_slices(inputs.devices, inputs.taints, pool);
    const bool same = wanted.size() == existing.size() && std::ranges::all_of(wanted, [&](const auto& slice) {
                        const auto it = existing.find(slice["metadata"]["name"].template get<std::string>());
                        return it != existing.end() && same_content(it->second, slice);
                      });
    if (same) {
      return listed->value("metadata", nlohmann::json::object()).value("resourceVersion", "");
    }
    pool.generation = ++m_generation;
    wanted = build_slices(inputs.devices, inputs.taints, pool);
    GPUCTK_TRY(write(wanted, existing));
    m_log("published " + std::to_string(inputs.devices.size()) + " devices in " +
          std::to_string(wanted.size()) + " ResourceSlices, pool generation " +
          std::to_string(pool.generation));
    auto after = list();
    if (!after) {
      return fail("list resourceslices: " + api_error(after.error()));
    }
    return after->value("metadata", nlohmann::json::object()).value("resourceVersion", "");
  }

  Result<void> write(const std::vector<nlohmann::json>& wanted,
                     std::map<std::string, nlohmann::json>& existing) {
    for (auto slice : wanted) {
      const std::string name = slice["metadata"]["name"];
      const auto it = existing.find(name);
      kube::ApiResult<nlohmann::json> done;
      if (it == existing.end()) {
        done = m_client.request("POST", k_collection, &slice);
      } else {
        slice["metadata"]["resourceVersion"] = it->second["metadata"].value("resourceVersion", "");
        done = m_client.request("PUT", std::string(k_collection) + "/" + name, &slice);
        existing.erase(it);
      }
      if (!done) {
        return fail("write resourceslice " + name + ": " + api_error(done.error()));
      }
    }
    for (const auto& [name, _] : existing) {
      auto done = m_client.request("DELETE", std::string(k_collection) + "/" + name);
      if (!done && done.error().status != 404) {
        return fail("delete resourceslice " + name + ": " + api_error(done.error()));
      }
    }
    return {};
  }

  // Watches from `version` until a slice changes, poke(), stop() or an error (false).
  bool watch(const std::string& version) {
    bool changed = false;
    auto done = m_client.watch(
        std::string(k_collection) + "?" + selector() + "&timeoutSeconds=300", version,
        [&](const kube::WatchEvent& event) {
          if (event.type == "BOOKMARK") {
            return true;
          }
          changed = true;
          m_log("ResourceSlice " +
                event.object.value("metadata", nlohmann::json::object()).value("name", "?") + ": " +
                event.type + " by someone else: publishing again");
          return false;
        },
        [&] { return m_stopping || m_poked; }, k_poll);
    if (!done) {
      m_log("error: watch resourceslices: " + api_error(done.error()));
      return false;
    }
    return true;
  }

  void run() {
    auto backoff = k_first_backoff;
    while (!m_stopping) {
      m_poked = false;
      auto version = sync();
      if (version && watch(*version)) {
        backoff = k_first_backoff;
        continue;
      }
      if (!version) {
        m_log("error: publish ResourceSlices: " + version.error().message + " (again in " +
              std::to_string(backoff.count()) + " s)");
      }
      std::unique_lock lock(m_mutex);
      m_wake.wait_for(lock, backoff, [&] { return m_stopping.load() || m_poked.load(); });
      backoff = std::min(backoff * 2, k_max_backoff);
    }
  }

  kube::Client m_client;
  std::string m_node;
  std::string m_node_uid;
  std::function<Inputs()> m_current;
  std::function<void(const std::string&)> m_log;
  int64_t m_generation = 0;
  std::atomic<bool> m_stopping{false};
  std::atomic<bool> m_poked{false};
  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::thread m_thread;
};

}  // namespace

std::unique_ptr<Publisher> Publisher::start(kube::Client client, std::string node_name,
                                            std::function<Inputs()> current,
                                            std::function<void(const std::string&)> log) {
  auto publisher = std::make_unique<SlicePublisher>(std::move(client), std::move(node_name),
                                                    std::move(current), std::move(log));
  publisher->begin();
  return publisher;
}

}  // namespace gpuctk::dra
