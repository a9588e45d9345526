#include "plugin/node_label.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "kube/client.hpp"
#include "plugin/log.hpp"
#include "util/fd.hpp"
#include "util/strings.hpp"

namespace gpuctk::plugin {

namespace {

constexpr std::string_view k_nodes = "/api/v1/nodes";

// The label's value on a Node object; nullopt when it has none (or is not a string, which the API never
// sends).
std::optional<std::string> label_of(const nlohmann::json& node, const std::string& key) {
  const auto metadata = node.find("metadata");
  if (metadata == node.end() || !metadata->is_object()) {
    return std::nullopt;
  }
  const auto labels = metadata->find("labels");
  if (labels == metadata->end() || !labels->is_object()) {
    return std::nullopt;
  }
  const auto value = labels->find(key);
  if (value == labels->end() || !value->is_string()) {
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::string shown(const std::optional<std::string>& value) {
  return value ? quote(*value) : std::string("unset");
}

class Watched final : public NodeLabel {
 public:
  Watched(std::string key, std::optional<std::string> value, UniqueFd event)
      : m_key(std::move(key)), m_value(std::move(value)), m_event(std::move(event)) {}
  Watched(const Watched&) = delete;
  Watched& operator=(const Watched&) = delete;
  ~Watched() override {
    if (m_watch) {
      m_watch->stop();  // before the members its thread uses go
    }
  }

  Result<void> watch(kube::Client client, const std::string& node) {
    GPUCTK_TRY_ASSIGN(
        m_watch, kube::ObjectWatch::start(
                     std::move(client), std::string(k_nodes), node,
                     [this, node](const std::optional<nlohmann::json>& object) { changed(node, object); },
                     [](const std::string& line) { log("node label watch: " + line); }));
    return {};
  }

  [[nodiscard]] int fd() const override { return m_event.get(); }

  std::optional<std::string> value() override {
    uint64_t count = 0;
    [[maybe_unused]] const auto n = ::read(m_event.get(), &count, sizeof count);
    const std::lock_guard lock(m_mutex);
    return m_value;
  }

 private:
  // In the watch's thread.
  void changed(const std::string& node, const std::optional<nlohmann::json>& object) {
    if (!object) {
      // A node deleted comes back when its kubelet registers it again: its last label stays in force.
      const std::lock_guard lock(m_mutex);
      log("node " + node + " is not in the API server: its label stays " + shown(m_value));
      return;
    }
    auto value = label_of(*object, m_key);
    {
      const std::lock_guard lock(m_mutex);
      if (value == m_value) {
        return;
      }
      m_value = value;
    }
    log("node label " + m_key + " is now " + shown(value));
    const uint64_t one = 1;
    [[maybe_unused]] const auto n = ::write(m_event.get(), &one, sizeof one);
  }

  std::string m_key;
  std::mutex m_mutex;
  std::optional<std::string> m_value;  // guarded by m_mutex
  UniqueFd m_event;
  std::unique_ptr<kube::ObjectWatch> m_watch;
};

}  // namespace

Result<std::unique_ptr<NodeLabel>> NodeLabel::start(const NodeConfigOptions& options) {
  GPUCTK_TRY_ASSIGN(auto credentials, kube::load_credentials(options.kubeconfig, [](const char* name) {
                      return std::getenv(name);
                    }));
  const std::string origin = credentials.origin;
  GPUCTK_TRY_ASSIGN(auto client, kube::Client::create(std::move(credentials)));
  auto node = client.get(std::string(k_nodes) + "/" + options.node_name);
  if (!node) {
    return fail("read node " + options.node_name + " (" + origin + "): " + node.error().message);
  }
  UniqueFd event(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!event) {
    return fail_errno("eventfd", errno);
  }
  auto value = label_of(*node, options.node_label);
  log("node " + options.node_name + ": label " + options.node_label + " is " + shown(value) + " (" + origin +
      ")");
  auto label = std::make_unique<Watched>(options.node_label, std::move(value), std::move(event));
  GPUCTK_TRY(label->watch(std::move(client), options.node_name));
  return label;
}

}  // namespace gpuctk::plugin
