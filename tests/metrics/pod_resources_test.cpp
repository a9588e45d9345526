// list_pod_resources against a kubelet stand-in (podresources_stub.py, a real gRPC server on a unix
// socket): the answers a GPU node gives, and the hostile ones. A program of its own (ctest
// exporter.pod_resources, -DGPUCTK_EXPORTER=ON only): gpuctk_tests never links gRPC.

#include "metrics/pod_resources.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/temp_dir.hpp"

extern char** environ;

namespace gpuctk::metrics {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds k_timeout{30'000};  // a healthy stand-in answers in well under a second
constexpr int k_ready_wait_ms = 120'000;   // its start: python, grpc and the stubs, on 2 busy cores

// The stand-in, started with a mode's arguments; stopped (SIGTERM, reaped) on destruction.
class StubServer {
 public:
  StubServer() = default;
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;
  ~StubServer() { stop(); }

  // Starts it and waits for "ready"; an error says why it did not come up ("skip: …" for exit 77).
  std::string start(const std::string& socket, const std::vector<std::string>& mode) {
    std::vector<std::string> args = {"/usr/bin/python3",
                                     GPUCTK_SOURCE_DIR "/tests/metrics/podresources_stub.py",
                                     GPUCTK_PODRESOURCES_PROTO, GPUCTK_STUBS_DIR, socket};
    args.insert(args.end(), mode.begin(), mode.end());
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
      return "pipe2 failed";
    }
    m_pid = spawn(args, out[1]);
    ::close(out[1]);
    std::string why = m_pid > 0 ? wait_ready(out[0]) : "posix_spawn failed";
    ::close(out[0]);
    return why;
  }

  // SIGTERM, then SIGKILL if it has not ended after about 10 s: how the stand-in ends is not under test,
  // and no test waits for it forever.
  void stop() {
    if (m_pid <= 0) {
      return;
    }
    ::kill(m_pid, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(m_pid, nullptr, WNOHANG) == m_pid) {
        m_pid = -1;
        return;
      }
      ::usleep(100'000);
    }
    ::kill(m_pid, SIGKILL);
    ::waitpid(m_pid, nullptr, 0);
    m_pid = -1;
  }

 private:
  static pid_t spawn(const std::vector<std::string>& args, int stdout_fd) {
    std::vector<char*> argv;
    for (const auto& arg : args) {
      argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
    pid_t pid = -1;
    const int err = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    return err == 0 ? pid : -1;
  }

  std::string wait_ready(int fd) {
    std::string seen;
    pollfd readable{.fd = fd, .events = POLLIN, .revents = 0};
    while (seen.find("ready\n") == std::string::npos) {
      if (::poll(&readable, 1, k_ready_wait_ms) != 1) {
        return "no \"ready\" within " + std::to_string(k_ready_wait_ms) + " ms";
      }
      char buffer[256];
      const ssize_t got = ::read(fd, buffer, sizeof buffer);
      if (got <= 0) {
        return exit_reason(seen);
      }
      seen.append(buffer, static_cast<size_t>(got));
    }
    return "";
  }

  std::string exit_reason(const std::string& seen) {
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_pid = -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
      return "skip: the stand-in cannot run here (its stderr says why)";
    }
    return "the stand-in ended before \"ready\" (status " + std::to_string(status) + "), printed: " + seen;
  }

  pid_t m_pid = -1;
};

class PodResourcesTest : public ::testing::Test {
 protected:
  std::string socket() const { return m_dir.path() + "/kubelet.sock"; }

  // Starts the stand-in in `mode`; the test is skipped (never passed) where it cannot run.
  void serve(const std::vector<std::string>& mode) {
    ASSERT_FALSE(m_dir.path().empty());
    const std::string why = m_server.start(socket(), mode);
    if (why.starts_with("skip: ")) {
      GTEST_SKIP() << why;
    }
    ASSERT_EQ(why, "");
  }

  // Serves `answer` (the API's JSON) from a file the test may rewrite.
  void serve_json(const std::string& answer) {
    m_answer = m_dir.write("answer.json", answer);
    serve({"json", m_answer});
  }

  test::TempDir m_dir{"gpuctk-podres"};
  StubServer m_server;
  std::string m_answer;
};

// One line per entry, "namespace/pod/container resource id,id,…": what the tests compare (the contract's
// struct has no operator==).
std::vector<std::string> lines(const std::vector<ContainerDevices>& listed) {
  std::vector<std::string> out;
  for (const auto& d : listed) {
    std::string line = d.namespace_name + "/" + d.pod + "/" + d.container + " " + d.resource_name + " ";
    for (size_t i = 0; i < d.device_ids.size(); ++i) {
      line += (i == 0 ? "" : ",") + d.device_ids[i];
    }
    out.push_back(std::move(line));
  }
  return out;
}

using Lines = std::vector<std::string>;

// A pod's JSON: one container per element of `containers`, each holding `ids` of nvidia.com/gpu.
nlohmann::json pod_json(const std::string& name, size_t containers, const std::vector<std::string>& ids) {
  nlohmann::json pod = {{"name", name}, {"namespace", "ml"}, {"containers", nlohmann::json::array()}};
  for (size_t i = 0; i < containers; ++i) {
    nlohmann::json devices = nlohmann::json::array();
    if (!ids.empty()) {
      devices.push_back({{"resource_name", "nvidia.com/gpu"}, {"device_ids", ids}});
    }
    pod["containers"].push_back({{"name", "c" + std::to_string(i)}, {"devices", devices}});
  }
  return pod;
}

// `holding` pods with a GPU in each of `containers` containers, and `idle` pods without devices.
std::string pods_json(size_t holding, size_t containers, size_t idle) {
  nlohmann::json pods = nlohmann::json::array();
  for (size_t i = 0; i < holding; ++i) {
    pods.push_back(pod_json("p" + std::to_string(i), containers, {"GPU-0::" + std::to_string(i)}));
  }
  for (size_t i = 0; i < idle; ++i) {
    pods.push_back(pod_json("idle" + std::to_string(i), 1, {}));
  }
  return nlohmann::json{{"pod_resources", pods}}.dump();
}

TEST_F(PodResourcesTest, WholeGpuOnlyDeviceEntriesCopied) {
  serve_json(R"({"pod_resources": [
    {"name": "train-0", "namespace": "ml", "containers": [
      {"name": "main", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-aaaa", "GPU-bbbb"]},
                                   {"resource_name": "example.com/none", "device_ids": []}],
       "cpu_ids": [2, 3]},
      {"name": "sidecar", "cpu_ids": [4]},
      {"name": "empty", "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": []}]}]},
    {"name": "web", "namespace": "default", "containers": [{"name": "nginx"}]}]})");
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(lines(*listed), Lines{"ml/train-0/main nvidia.com/gpu GPU-aaaa,GPU-bbbb"});
}

TEST_F(PodResourcesTest, ReplicasOfOneGpuInTwoPods) {
  serve_json(R"({"pod_resources": [
    {"name": "a", "namespace": "team1", "containers": [{"name": "x", "devices": [
      {"resource_name": "nvidia.com/gpu.shared", "device_ids": ["GPU-aaaa::0"]},
      {"resource_name": "example.com/nic", "device_ids": ["eth1"]}]}]},
    {"name": "b", "namespace": "team2", "containers": [{"name": "y", "devices": [
      {"resource_name": "nvidia.com/gpu.shared", "device_ids": ["GPU-aaaa::3", "GPU-aaaa::1"]}]}]}]})");
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  // Every resource is copied (attribute picks NVIDIA's), replica IDs as listed, in the answer's order.
  EXPECT_EQ(lines(*listed),
            (Lines{"team1/a/x nvidia.com/gpu.shared GPU-aaaa::0", "team1/a/x example.com/nic eth1",
                   "team2/b/y nvidia.com/gpu.shared GPU-aaaa::3,GPU-aaaa::1"}));
}

TEST_F(PodResourcesTest, MigDeviceAndAnAnswerReadAgainOnEveryCall) {
  serve_json(R"({"pod_resources": []})");
  auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_TRUE(listed->empty());
  m_dir.write("answer.json", R"({"pod_resources": [{"name": "infer", "namespace": "ml", "containers": [
    {"name": "m", "devices": [{"resource_name": "nvidia.com/mig-1g.10gb",
      "device_ids": ["MIG-4f8c-11ee-9a1d-0242ac120002"]}]}]}]})");
  listed = list_pod_resources(socket(), k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(lines(*listed), Lines{"ml/infer/m nvidia.com/mig-1g.10gb MIG-4f8c-11ee-9a1d-0242ac120002"});
}

TEST_F(PodResourcesTest, NoSocket) {
  ASSERT_FALSE(m_dir.path().empty());
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().message, "pod-resources: " + socket() + ": no such socket");
}

TEST_F(PodResourcesTest, NotASocket) {
  const std::string file = m_dir.write("kubelet.sock", "");
  const auto listed = list_pod_resources(file, k_timeout);
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().message, "pod-resources: " + file + ": not a socket");
}

TEST_F(PodResourcesTest, NothingListening) {
  // A socket bound by a kubelet that is gone: connect is refused.
  ASSERT_FALSE(m_dir.path().empty());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket().c_str(), sizeof(address.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ::close(fd);
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_FALSE(listed);
  EXPECT_TRUE(listed.error().message.starts_with("pod-resources: List: UNAVAILABLE: "))
      << listed.error().message;
}

TEST_F(PodResourcesTest, DeadlinePassed) {
  serve({"silent"});
  const auto listed = list_pod_resources(socket(), milliseconds{300});
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().message, "pod-resources: List: DEADLINE_EXCEEDED: Deadline Exceeded");
}

TEST_F(PodResourcesTest, AnswerOver16MiBRefused) {
  serve({"big"});
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_FALSE(listed);
  const std::string& message = listed.error().message;
  EXPECT_TRUE(
      message.starts_with("pod-resources: List: RESOURCE_EXHAUSTED: Received message larger than max ("))
      << message;
  EXPECT_TRUE(message.ends_with(" vs. 16777216)")) << message;
}

TEST_F(PodResourcesTest, HundredThousandPodsRefused) {
  serve({"huge"});
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().message,
            "pod-resources: List: more than 4096 pods hold devices: the answer is refused");
}

TEST_F(PodResourcesTest, PodBoundCountsOnlyPodsHoldingDevices) {
  serve_json(pods_json(k_max_pods, 1, 500));
  auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), k_max_pods);
  EXPECT_EQ(lines(*listed).back(), "ml/p4095/c0 nvidia.com/gpu GPU-0::4095");
  m_dir.write("answer.json", pods_json(k_max_pods + 1, 1, 0));
  listed = list_pod_resources(socket(), k_timeout);
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().message,
            "pod-resources: List: more than 4096 pods hold devices: the answer is refused");
}

TEST_F(PodResourcesTest, ContainerBoundPerPod) {
  serve_json(pods_json(1, k_max_containers, 0));
  auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(listed->size(), k_max_containers);
  nlohmann::json answer = nlohmann::json::parse(pods_json(1, k_max_containers + 1, 0));
  answer["pod_resources"][0]["name"] = "p\n0";
  m_dir.write("answer.json", answer.dump());
  listed = list_pod_resources(socket(), k_timeout);
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().message,
            "pod-resources: List: pod ml/p\\n0: more than 64 containers hold devices: the answer is refused");
}

// A container listing more IDs than attribute would keep: the client copies k_max_device_ids of them and
// counts the rest, so an answer of many tiny IDs never becomes a much larger tree.
TEST_F(PodResourcesTest, DeviceIdsPastTheBoundAreCountedNotCopied) {
  nlohmann::json ids = nlohmann::json::array();
  for (std::size_t i = 0; i < k_max_device_ids + 500; ++i) {
    ids.push_back("GPU-0::" + std::to_string(i));
  }
  nlohmann::json answer = {
      {"pod_resources",
       {{{"name", "p"},
         {"namespace", "ml"},
         {"containers",
          {{{"name", "c"}, {"devices", {{{"resource_name", "nvidia.com/gpu"}, {"device_ids", ids}}}}}}}}}}};
  serve_json(answer.dump());
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().device_ids.size(), k_max_device_ids);
  EXPECT_EQ(listed->front().device_ids.back(), "GPU-0::" + std::to_string(k_max_device_ids - 1));
  EXPECT_EQ(listed->front().device_ids_not_copied, 500u);
}

TEST_F(PodResourcesTest, OddNamesComeBackIntact) {
  serve({"odd"});
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  EXPECT_EQ(lines(*listed), (Lines{"line\nbreak/quote\"pod's/" + std::string(300, 'c') +
                                       " nvidia.com/gpu GPU-odd\"\\\x01\xc3\xa9",
                                   "line\nbreak/quote\"pod's/tab\there nvidia.com/" + std::string(300, 'r') +
                                       " MIG-" + std::string(300, '9')}));
}

TEST_F(PodResourcesTest, ErrorTextFromTheServerEscaped) {
  // The stand-in's INTERNAL answer names the file it could not read: here a name with a line break.
  m_answer = m_dir.path() + "/gone\nanswer.json";
  serve({"json", m_answer});
  const auto listed = list_pod_resources(socket(), k_timeout);
  ASSERT_FALSE(listed);
  const std::string escaped = m_dir.path() + "/gone\\nanswer.json";
  EXPECT_EQ(listed.error().message, "pod-resources: List: INTERNAL: podresources_stub.py: " + escaped +
                                        ": [Errno 2] No such file or directory: '" + escaped + "'");
}

}  // namespace
}  // namespace gpuctk::metrics
