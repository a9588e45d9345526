#pragma once
// A small Kubernetes API client over libcurl and nlohmann-json: what gpuctk's daemons need from the API
// server (the device plugin: its node's labels; the DRA plugin, later: ResourceSlices and ResourceClaims),
// nothing of client-go's generality. Built as its own static library (gpuctk_kube), linked only by the
// daemons and the tests, so that gpuctk never links libcurl.
//
// Credentials, as client-go finds them:
//   in-cluster  KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (an IPv6 host in brackets), the
//               service account's token, ca.crt and namespace under
//               /var/run/secrets/kubernetes.io/serviceaccount; the token file is read again when it
//               changed (the kubelet rotates projected tokens) and after a 401, once
//   kubeconfig  the current context's cluster (server, certificate-authority[-data],
//               insecure-skip-tls-verify is refused) and user (token, tokenFile, client-certificate[-data]
//               and client-key[-data]); exec and auth-provider plugins are refused by name
// Every answer is bounded (k_max_body for a GET, k_max_event per watch event) and every request has a
// timeout; API errors carry the HTTP status and the API's Status message:
//   GET /api/v1/nodes/n1: 404 Not Found: nodes "n1" not found

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.hpp"

namespace gpuctk::kube {

inline constexpr std::string_view k_service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
inline constexpr size_t k_max_body = 16 * 1024 * 1024;
inline constexpr size_t k_max_event = 4 * 1024 * 1024;

struct Credentials {
  std::string server;                             // "https://10.96.0.1:443"
  std::string ca_file;                            // PEM; "" with ca_pem "" : the system's CAs
  std::string ca_pem;                             // PEM text (kubeconfig certificate-authority-data, decoded)
  std::string token;                              // a bearer token given inline
  std::string token_file;                         // read at each use when it changed; wins over `token`
  std::string client_cert_file, client_key_file;  // PEM files (kubeconfig's -data forms are
  std::string client_cert_pem, client_key_pem;    // kept as text)
  std::string namespace_name;  // the service account's namespace ("" from a kubeconfig without one)
  std::string origin;          // "in-cluster service account", "kubeconfig /etc/kubernetes/kubelet.conf"
};

// The in-cluster credentials; `getenv` for the two variables, `dir` for the service account's files.
Result<Credentials> in_cluster(const std::function<const char*(const char*)>& getenv,
                               std::string_view dir = k_service_account_dir);
// The credentials of a kubeconfig's current context.
Result<Credentials> from_kubeconfig(const std::string& path);
// from_kubeconfig(path) when `path` is not empty, else in_cluster.
Result<Credentials> load_credentials(const std::string& kubeconfig,
                                     const std::function<const char*(const char*)>& getenv);

// An API error: the HTTP status (0 when none came back: a connection or TLS failure) and the message.
struct ApiError {
  long status = 0;
  std::string message;
};
template <class T>
using ApiResult = std::expected<T, ApiError>;

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  nlohmann::json object;
};

class Client {
 public:
  static Result<Client> create(Credentials credentials);
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  // One request; `path` starts with "/" and carries its query. The answer's JSON (an empty object for an
  // empty body). A status outside 2xx is an ApiError with the API's Status message.
  ApiResult<nlohmann::json> request(std::string_view method, std::string_view path,
                                    const nlohmann::json* body = nullptr,
                                    std::string_view content_type = "application/json");
  ApiResult<nlohmann::json> get(std::string_view path) { return request("GET", path); }

  // A watch request (`path` without watch=1; it is added, with allowWatchBookmarks=true and the
  // resourceVersion given). Calls `on_event` for each event in order until the server closes the stream
  // (success), `on_event` returns false (success), `stop` is true (checked at least every `poll`), or an
  // error (410 Gone included: the caller lists again). An ERROR event is returned as the ApiError of its
  // Status.
  ApiResult<void> watch(std::string_view path, std::string_view resource_version,
                        const std::function<bool(const WatchEvent&)>& on_event,
                        const std::function<bool()>& stop,
                        std::chrono::milliseconds poll = std::chrono::milliseconds(200));

  [[nodiscard]] const Credentials& credentials() const;

 private:
  struct State;
  explicit Client(std::unique_ptr<State> state);
  std::unique_ptr<State> m_state;
};

// Keeps one object up to date, as an informer of one name does: a list of that name (a GET of the
// collection with fieldSelector=metadata.name=<name>), then watches from the list's resourceVersion,
// resumed from the last version seen (bookmarks included) when a stream ends, listed again at once after
// 410 Gone and after a backoff (1 s doubling to 30 s) after other errors. Runs in a thread of its own.
class ObjectWatch {
 public:
  // `collection`: "/api/v1/nodes"; `name`: the object's name. `changed` gets the object after each
  // change, nullopt when it is deleted or missing (the list is empty); `log` gets each error and recovery.
  static Result<std::unique_ptr<ObjectWatch>> start(
      Client client, std::string collection, std::string name,
      std::function<void(const std::optional<nlohmann::json>&)> changed,
      std::function<void(const std::string&)> log);
  virtual ~ObjectWatch() = default;
  // Ends the thread; returns within about a second.
  virtual void stop() = 0;
};

}  // namespace gpuctk::kube
