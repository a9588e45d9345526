// list_pod_resources against a hostile server that writes raw HTTP/2 bytes (frames and HPACK literals
// built here): what a real gRPC server never sends, and grpc_unary must refuse without trusting it.

#include "metrics/grpc_unary.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "metrics/pod_resources.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk::metrics {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds k_timeout{30'000};
constexpr int k_accept_wait_ms = 30'000;

// An HTTP/2 frame: 24-bit length, type, flags, stream (RFC 9113 section 4.1).
std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::string& payload) {
  const auto size = static_cast<std::uint32_t>(payload.size());
  std::string out = {static_cast<char>(size >> 16),
                     static_cast<char>((size >> 8) & 0xff),
                     static_cast<char>(size & 0xff),
                     static_cast<char>(type),
                     static_cast<char>(flags),
                     static_cast<char>(stream >> 24),
                     static_cast<char>((stream >> 16) & 0xff),
                     static_cast<char>((stream >> 8) & 0xff),
                     static_cast<char>(stream & 0xff)};
  return out + payload;
}

constexpr std::uint8_t k_data = 0;
constexpr std::uint8_t k_headers = 1;
constexpr std::uint8_t k_settings = 4;
constexpr std::uint8_t k_end_stream = 0x1;
constexpr std::uint8_t k_end_headers = 0x4;

// One HPACK "literal header field without indexing, new name" (RFC 7541 6.2.2), lengths under 127.
std::string literal(const std::string& name, const std::string& value) {
  return std::string(1, '\0') + static_cast<char>(name.size()) + name + static_cast<char>(value.size()) +
         value;
}

std::string server_settings() {
  return frame(k_settings, 0, 0, "");
}

std::string response_headers() {
  return frame(k_headers, k_end_headers, 1,
               literal(":status", "200") + literal("content-type", "application/grpc"));
}

std::string trailers(const std::string& status, const std::string& message = "") {
  std::string block = literal("grpc-status", status);
  if (!message.empty()) {
    block += literal("grpc-message", message);
  }
  return frame(k_headers, k_end_headers | k_end_stream, 1, block);
}

// gRPC's message prefix: the compressed flag and the 4-byte big-endian length.
std::string prefix(std::uint8_t flag, std::uint32_t length) {
  return {static_cast<char>(flag), static_cast<char>(length >> 24), static_cast<char>((length >> 16) & 0xff),
          static_cast<char>((length >> 8) & 0xff), static_cast<char>(length & 0xff)};
}

std::string data(const std::string& payload) {
  return frame(k_data, 0, 1, payload);
}

// Protobuf's wire format, for the answers built here: a length-delimited field (lengths under 128).
std::string field(int number, const std::string& value) {
  return std::string(1, static_cast<char>((number << 3) | 2)) + static_cast<char>(value.size()) + value;
}

// Accepts one connection on its socket, writes `bytes`, ends its writing side and reads until the client
// closes; the thread is joined on destruction.
class RawServer {
 public:
  RawServer(const std::string& socket, std::string bytes) {
    ::unlink(socket.c_str());  // the previous server's, in a test with several
    m_listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket.c_str(), sizeof(address.sun_path) - 1);
    m_ready = m_listener >= 0 &&
              ::bind(m_listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
              ::listen(m_listener, 1) == 0;
    if (m_ready) {
      m_thread = std::thread([this, bytes = std::move(bytes)] { serve(bytes); });
    }
  }
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;
  ~RawServer() {
    if (m_thread.joinable()) {
      m_thread.join();
    }
    if (m_listener >= 0) {
      ::close(m_listener);
    }
  }
  [[nodiscard]] bool ready() const { return m_ready; }

 private:
  void serve(const std::string& bytes) const {
    pollfd waiting{.fd = m_listener, .events = POLLIN, .revents = 0};
    if (::poll(&waiting, 1, k_accept_wait_ms) != 1) {
      return;
    }
    const int fd = ::accept4(m_listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      return;
    }
    std::size_t sent = 0;
    while (sent < bytes.size()) {
      const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) {
        break;
      }
      sent += static_cast<std::size_t>(n);
    }
    ::shutdown(fd, SHUT_WR);
    char buffer[4096];
    while (::read(fd, buffer, sizeof buffer) > 0) {
    }
    ::close(fd);
  }

  int m_listener = -1;
  bool m_ready = false;
  std::thread m_thread;
};

class GrpcUnaryTest : public ::testing::Test {
 protected:
  // list_pod_resources' error against a server writing `bytes` ("" when the call succeeded).
  std::string error_for(std::string bytes) {
    const std::string socket = m_dir.path() + "/kubelet.sock";
    RawServer server(socket, std::move(bytes));
    if (!server.ready()) {
      return "the raw server did not start";
    }
    const auto listed = list_pod_resources(socket, k_timeout);
    return listed ? "" : listed.error().message;
  }

  test::TempDir m_dir{"gpuctk-grpc"};
};

TEST_F(GrpcUnaryTest, GarbagePrefaceRefused) {
  EXPECT_EQ(
      error_for("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"),
      "pod-resources: List: UNAVAILABLE: HTTP/2: Remote peer returned unexpected data while we expected "
      "SETTINGS frame.  Perhaps, peer does not support HTTP/2 properly.");
}

TEST_F(GrpcUnaryTest, MessageLengthOverTheBoundRefusedFromItsPrefix) {
  EXPECT_EQ(
      error_for(server_settings() + response_headers() + data(prefix(0, (1U << 24) + 1)) + trailers("0")),
      "pod-resources: List: RESOURCE_EXHAUSTED: Received message larger than max (16777217 vs. 16777216)");
  EXPECT_EQ(
      error_for(server_settings() + response_headers() + data(prefix(0, 0xffffffffU))),
      "pod-resources: List: RESOURCE_EXHAUSTED: Received message larger than max (4294967295 vs. 16777216)");
}

TEST_F(GrpcUnaryTest, StatusWithMessagePercentDecodedAndEscaped) {
  EXPECT_EQ(error_for(server_settings() + response_headers() + trailers("7", "no%20access%0Afor you%2")),
            "pod-resources: List: PERMISSION_DENIED: no access\\nfor you%2");
  // Trailers-only: the status in the one header block, as gRPC servers answer an unknown method.
  EXPECT_EQ(error_for(server_settings() + frame(k_headers, k_end_headers | k_end_stream, 1,
                                                literal(":status", "200") + literal("grpc-status", "12"))),
            "pod-resources: List: UNIMPLEMENTED: ");
}

TEST_F(GrpcUnaryTest, CompressedMessageRefused) {
  EXPECT_EQ(error_for(server_settings() + response_headers() + data(prefix(1, 0)) + trailers("0")),
            "pod-resources: List: INTERNAL: a compressed message, which was not asked for");
}

TEST_F(GrpcUnaryTest, SecondMessageRefused) {
  EXPECT_EQ(
      error_for(server_settings() + response_headers() + data(prefix(0, 0) + prefix(0, 0)) + trailers("0")),
      "pod-resources: List: INTERNAL: more than one message in a unary answer");
}

TEST_F(GrpcUnaryTest, HeaderFieldsBounded) {
  std::string block = literal(":status", "200");
  for (std::size_t i = 0; i < k_max_grpc_header_fields; ++i) {
    block += literal("x-a", "b");
  }
  EXPECT_EQ(error_for(server_settings() + frame(k_headers, k_end_headers, 1, block)),
            "pod-resources: List: RESOURCE_EXHAUSTED: more than 64 header fields");
}

TEST_F(GrpcUnaryTest, AnswerEndedEarly) {
  EXPECT_EQ(error_for(server_settings() + response_headers() + data(prefix(0, 10) + "abc")),
            "pod-resources: List: UNAVAILABLE: the connection closed before the answer ended");
  EXPECT_EQ(error_for(server_settings() + response_headers() + data(prefix(0, 10) + "abc") + trailers("0")),
            "pod-resources: List: INTERNAL: the answer ended inside its message");
  EXPECT_EQ(error_for(server_settings() + response_headers() + trailers("0")),
            "pod-resources: List: INTERNAL: No message returned for unary request");
  EXPECT_EQ(error_for(server_settings() +
                      frame(k_headers, k_end_headers | k_end_stream, 1, literal(":status", "404"))),
            "pod-resources: List: UNIMPLEMENTED: HTTP status 404");
}

TEST_F(GrpcUnaryTest, FieldsInAnyOrderUnknownOnesSkipped) {
  // A pod whose name and namespace come after its container, with fields this client does not read
  // (cpu_ids = 3 as a varint, an unknown field 9) around the ones it does.
  const std::string devices = field(2, "GPU-1") + field(1, "nvidia.com/gpu") + field(3, "");
  const std::string container = std::string("\x18\x05", 2) + field(2, devices) + field(1, "main");
  const std::string pod = field(3, container) + field(9, "x") + field(2, "ml") + field(1, "train");
  const std::string answer = field(1, pod);
  const std::string socket = m_dir.path() + "/kubelet.sock";
  RawServer server(socket, server_settings() + response_headers() +
                               data(prefix(0, static_cast<std::uint32_t>(answer.size())) + answer) +
                               trailers("0"));
  ASSERT_TRUE(server.ready());
  const auto listed = list_pod_resources(socket, k_timeout);
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 1U);
  const ContainerDevices& entry = listed->front();
  EXPECT_EQ(entry.namespace_name + "/" + entry.pod + "/" + entry.container + " " + entry.resource_name,
            "ml/train/main nvidia.com/gpu");
  EXPECT_EQ(entry.device_ids, std::vector<std::string>{"GPU-1"});
}

TEST_F(GrpcUnaryTest, BrokenWireFormatRefused) {
  // A pod whose length runs past the message.
  const std::string answer = std::string("\x0a\x7f", 2) + field(1, "p");
  EXPECT_EQ(error_for(server_settings() + response_headers() +
                      data(prefix(0, static_cast<std::uint32_t>(answer.size())) + answer) + trailers("0")),
            "pod-resources: List: INTERNAL: the answer is not a ListPodResourcesResponse");
}

TEST(PercentDecode, HexPairsOnly) {
  EXPECT_EQ(percent_decode("a%20b%0a%zz%4"), "a b\n%zz%4");
  EXPECT_EQ(percent_decode("%"), "%");
  EXPECT_EQ(percent_decode("%E2%9C%93"), "\xe2\x9c\x93");
}

}  // namespace
}  // namespace gpuctk::metrics
