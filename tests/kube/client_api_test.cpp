// kube::Client and kube::ObjectWatch against the strict stand-in API server (tests/kube/apiserver.py: HTTPS
// on loopback, its own CA, tokens that expire, watches with bookmarks, compaction and 410 Gone). No real
// API server is run. Each test starts its own server; ctest runs them as kube.* (tests/kube/CMakeLists.txt).
#include <curl/curl.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kube/client.hpp"
#include "support/temp_dir.hpp"
#include "util/file.hpp"

namespace gpuctk::kube {
namespace {

using namespace std::chrono_literals;

// Long enough never to matter on a loaded machine; only a hang reaches it.
constexpr auto k_patience = 30s;

size_t append(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// apiserver.py in a folder of its own, for one test.
class ApiServer {
 public:
  explicit ApiServer(const std::vector<std::string>& nodes) : m_dir("gpuctk-kube-api") {
    std::vector<std::string> args = {"/usr/bin/python3",
                                     std::string(GPUCTK_SOURCE_DIR) + "/tests/kube/apiserver.py", "--dir",
                                     m_dir.path()};
    for (const std::string& node : nodes) {
      args.insert(args.end(), {"--node", node});
    }
    m_pid = ::fork();
    if (m_pid == 0) {
      std::vector<char*> argv;
      for (std::string& arg : args) {
        argv.push_back(arg.data());
      }
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + k_patience;
    while (!std::filesystem::exists(m_dir.path() + "/ready") && std::chrono::steady_clock::now() < deadline &&
           ::waitpid(m_pid, nullptr, WNOHANG) == 0) {
      std::this_thread::sleep_for(20ms);
    }
    m_port = read_number("port");
    m_control_port = read_number("control-port");
  }
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;
  ~ApiServer() {
    if (m_pid > 0) {
      ::kill(m_pid, SIGTERM);
      ::waitpid(m_pid, nullptr, 0);
    }
  }

  [[nodiscard]] bool ready() const { return m_port != 0 && m_control_port != 0; }
  [[nodiscard]] const std::string& dir() const { return m_dir.path(); }
  [[nodiscard]] std::string server() const { return "https://127.0.0.1:" + std::to_string(m_port); }
  [[nodiscard]] int port() const { return m_port; }

  // A control request (apiserver.py's docstring); the answer's JSON (null when it was none).
  nlohmann::json control(const std::string& path, const nlohmann::json* body = nullptr) const {
    CURL* curl = curl_easy_init();
    std::string answer;
    const std::string url = "http://127.0.0.1:" + std::to_string(m_control_port) + path;
    const std::string payload = body != nullptr ? body->dump() : "";
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_PROXY, "");
    if (body != nullptr) {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
    const CURLcode code = curl_easy_perform(curl);
    curl_easy_cleanup(curl);
    EXPECT_EQ(code, CURLE_OK) << path;
    return nlohmann::json::parse(answer, nullptr, false);
  }
  nlohmann::json post(const std::string& path, const nlohmann::json& body) const {
    return control(path, &body);
  }
  void label(const std::string& node, const std::string& key, const nlohmann::json& value) const {
    post("/label", {{"node", node}, {"key", key}, {"value", value}});
  }
  // The API requests the server was asked, in order.
  [[nodiscard]] std::vector<nlohmann::json> requests() const {
    return control("/requests").at("requests").get<std::vector<nlohmann::json>>();
  }
  // The watches asked for so far, as their resourceVersion parameters ("" when none).
  [[nodiscard]] std::vector<std::string> watch_versions() const {
    std::vector<std::string> out;
    for (const auto& request : requests()) {
      if (request["query"].value("watch", "") == "1") {
        out.push_back(request["query"].value("resourceVersion", ""));
      }
    }
    return out;
  }
  [[nodiscard]] int open_watches() const { return control("/watches").at("open").get<int>(); }
  [[nodiscard]] std::string resource_version() const { return control("/state").at("resourceVersion"); }

  [[nodiscard]] Credentials token_credentials() const {
    Credentials c;
    c.server = server();
    c.ca_file = dir() + "/ca.crt";
    c.token_file = dir() + "/serviceaccount/token";
    return c;
  }

 private:
  int read_number(const std::string& name) const {
    std::ifstream in(m_dir.path() + "/" + name);
    int value = 0;
    in >> value;
    return value;
  }

  test::TempDir m_dir;
  pid_t m_pid = -1;
  int m_port = 0;
  int m_control_port = 0;
};

template <class Predicate>
bool eventually(Predicate predicate) {
  const auto deadline = std::chrono::steady_clock::now() + k_patience;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

Client make_client(const Credentials& credentials) {
  auto client = Client::create(credentials);
  EXPECT_TRUE(client) << client.error().message;
  return std::move(client).value();
}

// What an ObjectWatch reported, from its thread.
struct Recorder {
  std::mutex mutex;
  std::vector<std::optional<nlohmann::json>> changes;
  std::vector<std::string> logs;

  auto changed() {
    return [this](const std::optional<nlohmann::json>& object) {
      const std::lock_guard lock(mutex);
      changes.push_back(object);
    };
  }
  auto log() {
    return [this](const std::string& line) {
      const std::lock_guard lock(mutex);
      logs.push_back(line);
    };
  }
  size_t count() {
    const std::lock_guard lock(mutex);
    return changes.size();
  }
  std::optional<nlohmann::json> last() {
    const std::lock_guard lock(mutex);
    return changes.empty() ? std::nullopt : changes.back();
  }
  std::string label(const std::string& key) {
    const auto object = last();
    return object ? object->at("metadata").value("labels", nlohmann::json::object()).value(key, "")
                  : "(none)";
  }
  // The log and the watches' versions so far, for a failure's message.
  std::string history(ApiServer& server) {
    std::string out = "watch log:";
    {
      const std::lock_guard lock(mutex);
      for (const auto& line : logs) {
        out += "\n  " + line;
      }
    }
    out += "\nwatches from:";
    for (const auto& version : server.watch_versions()) {
      out += " " + version;
    }
    return out;
  }
  bool logged(const std::string& text) {
    const std::lock_guard lock(mutex);
    return std::ranges::any_of(logs,
                               [&](const std::string& line) { return line.find(text) != std::string::npos; });
  }
};

class KubeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/python3", X_OK) != 0 || std::system("command -v openssl >/dev/null") != 0) {
      GTEST_SKIP() << "python3 or openssl missing (scripts/deps.sh test)";
    }
    ASSERT_TRUE(server.ready()) << "apiserver.py did not start";
  }
  ApiServer server{{"n1:gpu=a100", "n2"}};
};

TEST_F(KubeApi, GetAnObjectAMissingOneAndWithoutAValidToken) {
  Client client = make_client(server.token_credentials());
  auto node = client.get("/api/v1/nodes/n1");
  ASSERT_TRUE(node) << node.error().message;
  EXPECT_EQ(node->at("metadata").at("labels").at("gpu"), "a100");
  EXPECT_EQ(node->at("kind"), "Node");

  auto missing = client.get("/api/v1/nodes/n9");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().status, 404);
  EXPECT_EQ(missing.error().message, "GET /api/v1/nodes/n9: 404 Not Found: nodes \"n9\" not found");

  auto unknown_parameter = client.get("/api/v1/nodes?limit=1");
  EXPECT_EQ(unknown_parameter.error().message,
            "GET /api/v1/nodes?limit=1: 400 Bad Request: unknown query parameter \"limit\"");

  Credentials wrong = server.token_credentials();
  wrong.token_file.clear();
  wrong.token = "not-a-token";
  Client stranger = make_client(wrong);
  auto refused = stranger.get("/api/v1/nodes/n1");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().status, 401);
  EXPECT_EQ(refused.error().message, "GET /api/v1/nodes/n1: 401 Unauthorized: Unauthorized");
}

TEST_F(KubeApi, PatchWithAStaleVersionOrAnUnknownFieldIsRefused) {
  Client client = make_client(server.token_credentials());
  const auto node = client.get("/api/v1/nodes/n1").value();
  const std::string version = node["metadata"]["resourceVersion"];
  const nlohmann::json patch = {{"metadata", {{"resourceVersion", version}, {"labels", {{"x", "1"}}}}}};
  auto patched = client.request("PATCH", "/api/v1/nodes/n1", &patch, "application/merge-patch+json");
  ASSERT_TRUE(patched) << patched.error().message;
  EXPECT_EQ(patched->at("metadata").at("labels").at("x"), "1");

  auto stale = client.request("PATCH", "/api/v1/nodes/n1", &patch, "application/merge-patch+json");
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().status, 409);
  EXPECT_EQ(
      stale.error().message,
      "PATCH /api/v1/nodes/n1: 409 Conflict: Operation cannot be fulfilled on nodes \"n1\": the object has "
      "been modified; please apply your changes to the latest version and try again");

  const nlohmann::json unknown = {{"spec", {{"gpus", 8}}}};
  EXPECT_EQ(
      client.request("PATCH", "/api/v1/nodes/n1", &unknown, "application/merge-patch+json").error().message,
      "PATCH /api/v1/nodes/n1: 400 Bad Request: strict decoding error: unknown field \"spec.gpus\"");
}

TEST_F(KubeApi, KubeconfigWithClientCertificateAsTextAndAsFiles) {
  const std::string kubeconfig = server.dir() + "/cert-kubeconfig";
  std::ofstream(kubeconfig) << "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                               "clusters:\n- name: k\n  cluster:\n    server: "
                            << server.server()
                            << "\n    certificate-authority: ca.crt\nusers:\n- name: u\n  user:\n"
                               "    client-certificate: client.crt\n    client-key: client.key\n";
  auto from_files = from_kubeconfig(kubeconfig);
  ASSERT_TRUE(from_files) << from_files.error().message;
  EXPECT_TRUE(make_client(*from_files).get("/api/v1/nodes/n1"));

  Credentials blobs;
  blobs.server = server.server();
  blobs.ca_pem = read_file(server.dir() + "/ca.crt").value();
  blobs.client_cert_pem = read_file(server.dir() + "/client.crt").value();
  blobs.client_key_pem = read_file(server.dir() + "/client.key").value();
  EXPECT_TRUE(make_client(blobs).get("/api/v1/nodes/n2"));
  const auto asked = server.requests();
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0]["user"], "gpuctk-test-user");
  EXPECT_EQ(asked[1]["user"], "gpuctk-test-user");
  EXPECT_EQ(asked[1]["code"], 200);

  // A CA that did not sign the server's certificate: no answer at all (status 0).
  Credentials other = server.token_credentials();
  other.ca_file = server.dir() + "/other-ca.crt";
  auto refused = make_client(other).get("/api/v1/nodes/n1");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().status, 0);
  EXPECT_TRUE(refused.error().message.starts_with("GET /api/v1/nodes/n1: SSL certificate problem"))
      << refused.error().message;
  EXPECT_EQ(server.requests().size(), 2u);  // nothing reached the server
}

// The kubelet replaces a projected token (a new file renamed into place); an edit that keeps the file's
// size and time is only seen after the 401.
TEST_F(KubeApi, InClusterTokenRotatedInItsFile) {
  const std::string port = std::to_string(server.port());
  const auto getenv = [&](const char* name) -> const char* {
    return std::string_view(name) == "KUBERNETES_SERVICE_HOST"   ? "127.0.0.1"
           : std::string_view(name) == "KUBERNETES_SERVICE_PORT" ? port.c_str()
                                                                 : nullptr;
  };
  auto credentials = in_cluster(getenv, server.dir() + "/serviceaccount");
  ASSERT_TRUE(credentials) << credentials.error().message;
  EXPECT_EQ(credentials->namespace_name, "gpuctk-test");
  Client client = make_client(*credentials);
  ASSERT_TRUE(client.get("/api/v1/nodes/n1"));

  const std::string token_file = server.dir() + "/serviceaccount/token";
  server.post("/token", {{"token", "gpuctk-test-token-2"}});
  server.post("/token", {{"token", "gpuctk-test-token-1"}, {"expire", true}});
  std::ofstream(token_file + ".new") << "gpuctk-test-token-2\n";
  std::filesystem::rename(token_file + ".new", token_file);
  auto rotated = client.get("/api/v1/nodes/n1");
  ASSERT_TRUE(rotated) << rotated.error().message;

  // In place, same size, the old time put back: the stamp is unchanged, the 401 makes it read again.
  struct stat before {};
  ASSERT_EQ(::stat(token_file.c_str(), &before), 0);
  server.post("/token", {{"token", "gpuctk-test-token-3"}});
  server.post("/token", {{"token", "gpuctk-test-token-2"}, {"expire", true}});
  std::ofstream(token_file, std::ios::in | std::ios::out) << "gpuctk-test-token-3\n";
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, token_file.c_str(), times, 0), 0);
  auto after_401 = client.get("/api/v1/nodes/n1");
  ASSERT_TRUE(after_401) << after_401.error().message;

  std::vector<std::string> seen;
  for (const auto& request : server.requests()) {
    seen.push_back(request["user"].get<std::string>() + " " + std::to_string(request["code"].get<int>()));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"token:gpuctk-test-token-1 200", "token:gpuctk-test-token-2 200",
                                            " 401", "token:gpuctk-test-token-3 200"}));

  // A token that expired with nothing new in the file: the 401, after one more read.
  server.post("/token", {{"token", "gpuctk-test-token-3"}, {"expire", true}});
  EXPECT_EQ(client.get("/api/v1/nodes/n1").error().status, 401);
}

TEST_F(KubeApi, AWatchSeesALabelChangeAndAnErrorEventIsItsStatus) {
  Client client = make_client(server.token_credentials());
  const std::string version = client.get("/api/v1/nodes/n1").value()["metadata"]["resourceVersion"];
  std::vector<std::string> seen;
  std::thread change([&] {
    if (eventually([&] { return server.open_watches() == 1; })) {
      server.label("n1", "nvidia.com/device-plugin.config", "a100-mig");
    }
  });
  auto watched = client.watch(
      "/api/v1/nodes?fieldSelector=metadata.name%3Dn1", version,
      [&](const WatchEvent& event) {
        seen.push_back(event.type + " " +
                       event.object["metadata"]["labels"].value("nvidia.com/device-plugin.config", ""));
        return false;  // one is enough
      },
      [] { return false; });
  change.join();
  ASSERT_TRUE(watched) << watched.error().message;
  EXPECT_EQ(seen, (std::vector<std::string>{"MODIFIED a100-mig"}));

  server.post("/compact", nlohmann::json::object());
  auto gone = client.watch(
      "/api/v1/nodes", version, [](const WatchEvent&) { return true; }, [] { return false; });
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().status, 410);
  const std::string now = server.resource_version();
  EXPECT_EQ(gone.error().message,
            "watch /api/v1/nodes?watch=1&allowWatchBookmarks=true&resourceVersion=" + version +
                ": 410 Gone: too old resource version: " + version + " (" + now + ")");
}

TEST_F(KubeApi, ObjectWatchFollowsResumesRelistsAndSeesTheDelete) {
  Recorder got;
  auto watch = ObjectWatch::start(make_client(server.token_credentials()), "/api/v1/nodes", "n1",
                                  got.changed(), got.log());
  ASSERT_TRUE(watch) << watch.error().message;
  ASSERT_TRUE(eventually([&] { return got.count() == 1 && server.open_watches() == 1; }));
  EXPECT_EQ(got.label("gpu"), "a100");

  // A label change reaches `changed`.
  server.label("n1", "nvidia.com/device-plugin.config", "small");
  ASSERT_TRUE(eventually([&] { return got.count() == 2; }));
  EXPECT_EQ(got.label("nvidia.com/device-plugin.config"), "small");
  const std::string seen_version = got.last()->at("metadata").at("resourceVersion");

  // A closed stream resumes from the last version seen.
  server.post("/close-watches", nlohmann::json::object());
  ASSERT_TRUE(eventually([&] { return server.watch_versions().size() == 2 && server.open_watches() == 1; }));
  EXPECT_EQ(server.watch_versions()[1], seen_version);

  // Another node changes (the watch is not told), a bookmark advances the version, the stream closes: the
  // next watch starts from the bookmark's version.
  server.label("n2", "x", "1");
  const std::string bookmark = server.post("/bookmark", nlohmann::json::object()).at("resourceVersion");
  EXPECT_NE(bookmark, seen_version);
  server.post("/close-watches", nlohmann::json::object());
  ASSERT_TRUE(eventually([&] { return server.watch_versions().size() == 3 && server.open_watches() == 1; }));
  EXPECT_EQ(server.watch_versions()[2], bookmark);
  EXPECT_EQ(got.count(), 2u);

  // History compacted past the version the watch holds: 410, a list again, a watch from the list's version
  // (the collection's, newer than n1's own). The 410 comes on the open stream (its position fell behind
  // the compaction) or, when the close below ends that stream first, as the answer to the next watch from
  // the bookmark: as on a real API server, either may come first.
  server.label("n2", "x", "2");
  const std::string compacted = server.post("/compact", nlohmann::json::object()).at("compacted");
  server.post("/close-watches", nlohmann::json::object());
  ASSERT_TRUE(eventually([&] {
    const auto v = server.watch_versions();
    return v.size() >= 4 && v.back() == compacted && server.open_watches() == 1;
  })) << got.history(server);
  auto versions = server.watch_versions();
  versions.erase(versions.begin(), versions.begin() + 3);
  if (versions.front() == bookmark) {
    versions.erase(versions.begin());  // refused with 410
  }
  // From the list's version on (a second one where the close ended the new watch too).
  ASSERT_FALSE(versions.empty());
  EXPECT_EQ(versions.size(), std::ranges::count(versions, compacted)) << got.history(server);
  EXPECT_LE(versions.size(), 2u) << got.history(server);
  EXPECT_TRUE(
      got.logged("410 Gone: too old resource version: " + bookmark + " (" + compacted + "); listing again"));
  EXPECT_EQ(got.count(), 2u) << "the relist found nothing new";
  const auto asked = server.requests();
  const auto lists = std::ranges::count_if(asked, [](const auto& r) {
    return r["path"] == "/api/v1/nodes" &&
           r["query"] == nlohmann::json{{"fieldSelector", "metadata.name=n1"}};
  });
  EXPECT_EQ(lists, 2);

  // Deleted: nullopt; created again: the new object.
  server.post("/delete", {{"node", "n1"}});
  ASSERT_TRUE(eventually([&] { return got.count() == 3; }));
  EXPECT_FALSE(got.last().has_value());
  server.post("/nodes", {{"name", "n1"}, {"labels", {{"gpu", "h100"}}}});
  ASSERT_TRUE(eventually([&] { return got.count() == 4; }));
  EXPECT_EQ(got.label("gpu"), "h100");

  (*watch)->stop();
  EXPECT_TRUE(eventually([&] { return server.open_watches() == 0; }));
}

TEST_F(KubeApi, ObjectWatchOfAMissingObjectThenBackOffAndRecovery) {
  Recorder got;
  auto watch = ObjectWatch::start(make_client(server.token_credentials()), "/api/v1/nodes", "n3",
                                  got.changed(), got.log());
  ASSERT_TRUE(watch);
  ASSERT_TRUE(eventually([&] { return got.count() == 1 && server.open_watches() == 1; }));
  EXPECT_FALSE(got.last().has_value()) << "an empty list: nullopt";
  EXPECT_EQ(server.watch_versions(), (std::vector<std::string>{server.resource_version()}));
  server.post("/nodes", {{"name", "n3"}});
  ASSERT_TRUE(eventually([&] { return got.count() == 2; }));
  EXPECT_EQ(got.last()->at("metadata").at("name"), "n3");

  // The token expires: the resumed watch gets 401, logged, retried after the backoff; a new token in the
  // file ends it.
  server.post("/token", {{"token", "gpuctk-test-token-1"}, {"expire", true}});
  server.post("/close-watches", nlohmann::json::object());
  ASSERT_TRUE(eventually([&] { return got.logged("401 Unauthorized: Unauthorized (again in 1 s)"); }));
  server.post("/token", {{"token", "gpuctk-test-token-2"}});
  const std::string token_file = server.dir() + "/serviceaccount/token";
  std::ofstream(token_file + ".new") << "gpuctk-test-token-2\n";
  std::filesystem::rename(token_file + ".new", token_file);
  ASSERT_TRUE(eventually([&] { return got.logged("nodes/n3: recovered"); }))
      << testing::PrintToString(got.logs);
  ASSERT_TRUE(eventually([&] { return server.open_watches() == 1; }));
  server.label("n3", "k", "v");
  ASSERT_TRUE(eventually([&] { return got.count() == 3; }));
  EXPECT_EQ(got.label("k"), "v");
}

// stop() ends the thread whether it waits on a watch that says nothing or on a GET the server never
// answers (the server's own limits are 300 s and more; the request timeout is 60 s).
TEST_F(KubeApi, StopEndsAQuietWatchAndAnUnansweredGet) {
  const auto stops_soon = [](ObjectWatch& watch) {
    auto stopped = std::async(std::launch::async, [&] { watch.stop(); });
    return stopped.wait_for(k_patience) == std::future_status::ready;
  };
  Recorder got;
  auto quiet = ObjectWatch::start(make_client(server.token_credentials()), "/api/v1/nodes", "n1",
                                  got.changed(), got.log());
  ASSERT_TRUE(quiet);
  ASSERT_TRUE(eventually([&] { return server.open_watches() == 1; }));
  EXPECT_TRUE(stops_soon(**quiet));
  EXPECT_TRUE(eventually([&] { return server.open_watches() == 0; }));

  server.post("/stall", {{"seconds", 600}});
  Recorder stalled;
  auto waiting = ObjectWatch::start(make_client(server.token_credentials()), "/api/v1/nodes", "n1",
                                    stalled.changed(), stalled.log());
  ASSERT_TRUE(waiting);
  ASSERT_TRUE(eventually([&] { return server.requests().size() == 3; }));  // the GET arrived
  EXPECT_TRUE(stops_soon(**waiting));
  EXPECT_EQ(stalled.count(), 0u);
  server.post("/stall", {{"seconds", 0}});
}

TEST_F(KubeApi, ObjectWatchRefusesNamesThatAreNoNames) {
  Recorder got;
  EXPECT_EQ(ObjectWatch::start(make_client(server.token_credentials()), "/api/v1/nodes", "n1&watch=0",
                               got.changed(), got.log())
                .error()
                .message,
            "watch: \"n1&watch=0\" is not an object name (a DNS subdomain)");
  EXPECT_EQ(ObjectWatch::start(make_client(server.token_credentials()), "api/v1/nodes", "n1", got.changed(),
                               got.log())
                .error()
                .message,
            "watch: \"api/v1/nodes\" is not a collection's path (\"/api/v1/nodes\")");
}

}  // namespace
}  // namespace gpuctk::kube
