// ObjectWatch (client.hpp): one object kept up to date by a GET and watches resumed from the last version
// seen, in a thread of its own.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "kube/client.hpp"
#include "kube/request_cancel.hpp"
#include "util/k8s_names.hpp"
#include "util/strings.hpp"

namespace gpuctk::kube {
namespace {

constexpr std::chrono::seconds k_first_backoff{1};
constexpr std::chrono::seconds k_max_backoff{30};
// The server ends each watch after this long (client-go asks for 5 to 10 minutes): a stream that a proxy
// or a load balancer silently dropped is replaced at least this often.
constexpr int k_watch_seconds = 300;
// How often a watch checks stop(): stop() returns within about this plus the join.
constexpr std::chrono::milliseconds k_poll{200};

std::string resource_version_of(const nlohmann::json& object) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return {};
  }
  const auto version = metadata->find("resourceVersion");
  return version != metadata->end() && version->is_string() ? version->get<std::string>() : std::string();
}

// What the loop does after a step.
enum class Next {
  go_on,    // the next step at once (a watch resumed, or a list after 410 Gone)
  settle,   // after a second: the server ended a watch at once, with nothing in it
  back_off  // after the backoff, doubled each time: an error
};

class Watcher final : public ObjectWatch {
 public:
  Watcher(Client client, std::string collection, std::string name,
          std::function<void(const std::optional<nlohmann::json>&)> changed,
          std::function<void(const std::string&)> log)
      : m_client(std::move(client)),
        m_collection(std::move(collection)),
        m_name(std::move(name)),
        m_changed(std::move(changed)),
        m_log(std::move(log)) {}
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  ~Watcher() override { stop(); }

  void begin() {
    m_thread = std::thread([this] { run(); });
  }

  void stop() override {
    {
      const std::lock_guard lock(m_mutex);
      m_stopping = true;
    }
    m_wake.notify_all();
    // From `changed` or `log` (the thread itself): the flag ends it after the callback; the owner joins.
    if (m_thread.joinable() && m_thread.get_id() != std::this_thread::get_id()) {
      m_thread.join();
    }
  }

 private:
  void run();
  // The list: the object (nullopt when there is none) and the collection's version.
  Next list();
  // One watch, from m_version (410 Gone sets m_relist).
  Next watch();
  void deliver(const std::optional<nlohmann::json>& object);
  bool on_event(const WatchEvent& event);
  void failed(const ApiError& error);
  void succeeded();
  // Waits `duration` or until stop(); false when stopping.
  bool pause(std::chrono::seconds duration);

  Client m_client;
  std::string m_collection, m_name;
  std::function<void(const std::optional<nlohmann::json>&)> m_changed;
  std::function<void(const std::string&)> m_log;

  std::mutex m_mutex;
  std::condition_variable m_wake;
  std::atomic<bool> m_stopping{false};
  std::thread m_thread;

  // The thread's own state.
  std::string m_version;  // the last resourceVersion seen
  bool m_relist = true;
  bool m_delivered = false;
  std::optional<nlohmann::json> m_last;
  bool m_failing = false;
  bool m_just_listed = false;  // no event since the last list
  std::chrono::seconds m_backoff = k_first_backoff;
};

void Watcher::run() {
  const RequestCancel cancel(m_stopping);  // a GET the server never answers ends at stop() too
  while (!m_stopping) {
    const Next next = m_relist ? list() : watch();
    if (next == Next::settle && !pause(k_first_backoff)) {
      break;
    }
    if (next == Next::back_off) {
      if (!pause(m_backoff)) {
        break;
      }
      m_backoff = std::min(m_backoff * 2, k_max_backoff);
    }
  }
}

Next Watcher::list() {
  // A list of the one name rather than a GET of it: the list's version is the collection's current one,
  // which a watch can start from; an object's own version may be older than the server's compacted
  // history (a node whose labels did not change for an hour), and a watch from it would get 410 forever.
  auto listed = m_client.get(m_collection + "?fieldSelector=metadata.name%3D" + m_name);
  if (!listed) {
    failed(listed.error());  // m_relist stays: the list again
    return Next::back_off;
  }
  const auto items = listed->find("items");
  const std::string version = resource_version_of(*listed);
  if (items == listed->end() || !items->is_array() || items->size() > 1 || version.empty()) {
    failed(ApiError{0, "GET " + m_collection + ": not a list of at most one object with a resourceVersion"});
    return Next::back_off;
  }
  m_relist = false;
  m_version = version;
  m_just_listed = true;
  succeeded();
  deliver(items->empty() ? std::nullopt : std::optional<nlohmann::json>(items->front()));
  return Next::go_on;
}

Next Watcher::watch() {
  const std::string path = m_collection + "?fieldSelector=metadata.name%3D" + m_name +
                           "&timeoutSeconds=" + std::to_string(k_watch_seconds);
  const auto started = std::chrono::steady_clock::now();
  size_t events = 0;
  auto result = m_client.watch(
      path, m_version,
      [&](const WatchEvent& event) {
        ++events;
        return on_event(event);
      },
      [this] { return m_stopping.load(); }, k_poll);
  if (result) {
    succeeded();
    // The server ended the stream: resumed from m_version, at once unless it ended at once with nothing.
    const bool at_once = std::chrono::steady_clock::now() - started < k_first_backoff;
    return events == 0 && at_once ? Next::settle : Next::go_on;
  }
  if (result.error().status == 410 && !m_just_listed) {
    m_log(m_collection + "/" + m_name + ": " + result.error().message + "; listing again");
    m_relist = true;  // at once, as client-go's reflector does
    return Next::go_on;
  }
  // After an error, a list again (as client-go's reflector does): its answer says at once whether the
  // server is back, and carries what changed while no watch was open. A 410 right after a list (a server
  // whose list and watch disagree) waits too, rather than spin.
  failed(result.error());
  m_relist = true;
  return Next::back_off;
}

bool Watcher::on_event(const WatchEvent& event) {
  m_just_listed = false;
  const std::string version = resource_version_of(event.object);
  if (event.type == "ADDED" || event.type == "MODIFIED") {
    deliver(event.object);
  } else if (event.type == "DELETED") {
    deliver(std::nullopt);
  } else if (event.type != "BOOKMARK") {
    m_log(m_collection + "/" + m_name + ": watch event of unknown type " + quote(event.type) + " skipped");
  }
  if (!version.empty()) {
    m_version = version;  // bookmarks included: a resumed watch starts past what they covered
  }
  succeeded();
  return !m_stopping;
}

void Watcher::deliver(const std::optional<nlohmann::json>& object) {
  if (m_delivered && m_last == object) {
    return;  // a relist that found what the watch had already given
  }
  m_delivered = true;
  m_last = object;
  m_changed(object);
}

void Watcher::failed(const ApiError& error) {
  m_failing = true;
  m_log(m_collection + "/" + m_name + ": " + error.message + " (again in " +
        std::to_string(m_backoff.count()) + " s)");
}

void Watcher::succeeded() {
  if (m_failing) {
    m_log(m_collection + "/" + m_name + ": recovered");
  }
  m_failing = false;
  m_backoff = k_first_backoff;
}

bool Watcher::pause(std::chrono::seconds duration) {
  std::unique_lock lock(m_mutex);
  m_wake.wait_for(lock, duration, [this] { return m_stopping.load(); });
  return !m_stopping;
}

}  // namespace

Result<std::unique_ptr<ObjectWatch>> ObjectWatch::start(
    Client client, std::string collection, std::string name,
    std::function<void(const std::optional<nlohmann::json>&)> changed,
    std::function<void(const std::string&)> log) {
  // Both go into the URL unescaped: a name is a DNS subdomain (a Node's is), a collection a plain path.
  if (!is_dns_subdomain(name)) {
    return fail("watch: " + quote(name) + " is not an object name (a DNS subdomain)");
  }
  const bool plain_path = std::ranges::all_of(collection, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' || c == '.' || c == '-';
  });
  if (!collection.starts_with('/') || collection.ends_with('/') || !plain_path) {
    return fail("watch: " + quote(collection) + " is not a collection's path (\"/api/v1/nodes\")");
  }
  if (!changed || !log) {
    return fail("watch: changed and log are needed");
  }
  auto watcher = std::make_unique<Watcher>(std::move(client), std::move(collection), std::move(name),
                                           std::move(changed), std::move(log));
  watcher->begin();
  return std::unique_ptr<ObjectWatch>(std::move(watcher));
}

}  // namespace gpuctk::kube
