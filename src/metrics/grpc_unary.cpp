#include "metrics/grpc_unary.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "util/fd.hpp"
#include "util/strings.hpp"

namespace gpuctk::metrics {
namespace {

using Clock = std::chrono::steady_clock;

// gRPC's status codes' names, by value, as gRPC's documentation and its clients spell them.
constexpr std::array<std::string_view, 17> k_status_names = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};
constexpr std::uint32_t k_internal = 13;
constexpr std::uint32_t k_unavailable = 14;
constexpr std::uint32_t k_unknown = 2;

std::string status_name(std::uint32_t code) {
  if (code < k_status_names.size()) {
    return std::string(k_status_names[code]);
  }
  return "code " + std::to_string(code);  // a code newer than this table
}

// gRPC's mapping of an HTTP status without grpc-status (doc/http-grpc-status-mapping.md), one row each.
struct HttpStatusCode {
  std::uint32_t http;
  std::uint32_t grpc;
};
constexpr std::array<HttpStatusCode, 7> k_http_status_codes = {{
    {400, k_internal},     // Bad Request
    {401, 16},             // Unauthorized: UNAUTHENTICATED
    {403, 7},              // Forbidden: PERMISSION_DENIED
    {404, 12},             // Not Found: UNIMPLEMENTED
    {429, k_unavailable},  // Too Many Requests
    {502, k_unavailable},  // Bad Gateway
    {503, k_unavailable},  // Service Unavailable (504 below: gRPC maps it the same)
}};

std::uint32_t grpc_code_of_http(std::uint32_t http) {
  if (http == 504) {
    return k_unavailable;  // Gateway Timeout
  }
  for (const auto& row : k_http_status_codes) {
    if (row.http == http) {
      return row.grpc;
    }
  }
  return k_unknown;
}

// gRPC's code for a stream reset without a status (gRPC's PROTOCOL-HTTP2.md "Errors"), by HTTP/2 error.
std::uint32_t grpc_code_of_reset(std::uint32_t h2_error) {
  switch (h2_error) {
    case NGHTTP2_REFUSED_STREAM:
      return k_unavailable;  // the server did not start the call: safe to retry
    case NGHTTP2_CANCEL:
      return 1;  // CANCELLED
    case NGHTTP2_ENHANCE_YOUR_CALM:
      return 8;  // RESOURCE_EXHAUSTED
    case NGHTTP2_INADEQUATE_SECURITY:
      return 7;  // PERMISSION_DENIED
    default:
      return k_internal;
  }
}

std::unexpected<Error> fail_code(std::uint32_t code, std::string_view message) {
  return fail(status_name(code) + ": " + std::string(message));
}

// grpc-timeout's value: at most 8 digits, in milliseconds or, past that, seconds.
std::string grpc_timeout(std::chrono::milliseconds timeout) {
  const auto ms = std::max<std::int64_t>(timeout.count(), 0);
  if (ms < 100'000'000) {
    return std::to_string(ms) + "m";
  }
  return std::to_string(std::min<std::int64_t>(ms / 1000, 99'999'999)) + "S";
}

constexpr std::size_t k_prefix = 5;  // gRPC's message prefix: compressed flag, 4-byte big-endian length

// What one call has seen of its answer; filled by nghttp2's callbacks.
class Answer {
 public:
  Answer(std::int32_t stream, std::size_t max_message) : m_stream(stream), m_max(max_message) {}

  void set_stream(std::int32_t stream) { m_stream = stream; }
  [[nodiscard]] bool closed() const { return m_closed; }
  [[nodiscard]] const std::optional<Error>& failure() const { return m_failure; }
  void set_library_error(std::string_view message) {
    m_library_error = escape_for_log(message.substr(0, 256));
  }
  [[nodiscard]] const std::string& library_error() const { return m_library_error; }

  int on_header(const nghttp2_frame& frame, std::string_view name, std::string_view value) {
    if (frame.hd.stream_id != m_stream) {
      return 0;
    }
    m_header_bytes += name.size() + value.size() + 32;
    if (++m_header_fields > k_max_grpc_header_fields) {
      return refuse(8, "more than " + std::to_string(k_max_grpc_header_fields) + " header fields");
    }
    if (m_header_bytes > k_max_grpc_header_bytes) {
      return refuse(8, "header fields over " + std::to_string(k_max_grpc_header_bytes) + " bytes");
    }
    if (name == ":status") {
      m_http_status = parse_u32(value);
    } else if (name == "grpc-status") {
      m_grpc_status = parse_u32(value);
      m_has_grpc_status = true;
    } else if (name == "grpc-message") {
      m_grpc_message = std::string(value);
    }
    return 0;
  }

  int on_data(std::int32_t stream, std::string_view data) {
    if (stream != m_stream) {
      return 0;
    }
    while (!data.empty()) {
      if (m_prefix.size() < k_prefix) {
        const std::size_t take = std::min(k_prefix - m_prefix.size(), data.size());
        m_prefix.append(data.substr(0, take));
        data.remove_prefix(take);
        if (m_prefix.size() == k_prefix && !begin_message()) {
          return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        continue;
      }
      if (m_message.size() == m_length) {
        return refuse(k_internal, "more than one message in a unary answer");
      }
      const std::size_t take = std::min(m_length - m_message.size(), data.size());
      m_message.append(data.substr(0, take));
      data.remove_prefix(take);
    }
    return 0;
  }

  // The server's side of the stream ended (END_STREAM on HEADERS or DATA): the answer is whole, even while
  // our own request is still being sent (a server may answer before it has read all of it).
  int on_frame(const nghttp2_frame& frame) {
    const bool answer_frame = frame.hd.type == NGHTTP2_HEADERS || frame.hd.type == NGHTTP2_DATA;
    if (frame.hd.stream_id == m_stream && answer_frame && (frame.hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
      m_closed = true;
    }
    return 0;
  }

  int on_close(std::int32_t stream, std::uint32_t error) {
    if (stream == m_stream) {
      m_closed = true;
      m_reset_error = error;
    }
    return 0;
  }

  // The call's result once the stream is closed.
  Result<std::string> result() && {
    if (m_failure) {
      return std::unexpected(*m_failure);
    }
    if (!m_has_grpc_status) {
      return missing_status();
    }
    if (!m_grpc_status) {
      return fail_code(k_unknown, "grpc-status is not a number");
    }
    if (*m_grpc_status != 0) {
      return fail_code(*m_grpc_status, escape_for_log(percent_decode(m_grpc_message)));
    }
    if (m_prefix.empty()) {
      return fail_code(k_internal, "No message returned for unary request");
    }
    if (m_prefix.size() < k_prefix || m_message.size() < m_length) {
      return fail_code(k_internal, "the answer ended inside its message");
    }
    return std::move(m_message);
  }

 private:
  int refuse(std::uint32_t code, std::string_view message) {
    if (!m_failure) {
      m_failure = fail_code(code, message).error();
    }
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }

  // The prefix is complete: the flag and the length are checked before any of the message is kept.
  bool begin_message() {
    const auto byte = [&](std::size_t i) { return static_cast<std::uint8_t>(m_prefix[i]); };
    if (byte(0) != 0) {
      refuse(k_internal, "a compressed message, which was not asked for");
      return false;
    }
    m_length = (std::size_t{byte(1)} << 24) | (std::size_t{byte(2)} << 16) | (std::size_t{byte(3)} << 8) |
               std::size_t{byte(4)};
    if (m_length > m_max) {
      refuse(8, "Received message larger than max (" + std::to_string(m_length) + " vs. " +
                    std::to_string(m_max) + ")");
      return false;
    }
    m_message.reserve(m_length);
    return true;
  }

  Result<std::string> missing_status() const {
    if (m_http_status && *m_http_status != 200) {
      return fail_code(grpc_code_of_http(*m_http_status), "HTTP status " + std::to_string(*m_http_status));
    }
    if (m_reset_error != NGHTTP2_NO_ERROR) {
      return fail_code(grpc_code_of_reset(m_reset_error),
                       std::string("the stream was reset: ") + nghttp2_http2_strerror(m_reset_error));
    }
    return fail_code(k_internal, "the answer has no grpc-status");
  }

  std::int32_t m_stream;
  std::size_t m_max;
  std::size_t m_header_fields = 0;
  std::size_t m_header_bytes = 0;
  std::optional<std::uint32_t> m_http_status;
  std::optional<std::uint32_t> m_grpc_status;
  bool m_has_grpc_status = false;
  std::string m_grpc_message;
  std::string m_prefix;
  std::size_t m_length = 0;
  std::string m_message;
  bool m_closed = false;
  std::uint32_t m_reset_error = NGHTTP2_NO_ERROR;
  std::optional<Error> m_failure;
  std::string m_library_error;
};

// nghttp2's callbacks, forwarding to the Answer of user_data.
Answer& answer_of(void* user_data) {
  return *static_cast<Answer*>(user_data);
}

std::string_view view(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

int on_header(nghttp2_session* /*session*/, const nghttp2_frame* frame, const std::uint8_t* name,
              std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
              std::uint8_t /*flags*/, void* user_data) {
  return answer_of(user_data).on_header(*frame, view(name, name_size), view(value, value_size));
}

int on_data(nghttp2_session* /*session*/, std::uint8_t /*flags*/, std::int32_t stream,
            const std::uint8_t* data, std::size_t size, void* user_data) {
  return answer_of(user_data).on_data(stream, view(data, size));
}

int on_frame(nghttp2_session* /*session*/, const nghttp2_frame* frame, void* user_data) {
  return answer_of(user_data).on_frame(*frame);
}

int on_close(nghttp2_session* /*session*/, std::int32_t stream, std::uint32_t error, void* user_data) {
  return answer_of(user_data).on_close(stream, error);
}

int on_error(nghttp2_session* /*session*/, int /*code*/, const char* message, std::size_t size,
             void* user_data) {
  answer_of(user_data).set_library_error({message, size});
  return 0;
}

// The request's body: the gRPC prefix (not compressed, the length) and the serialized request.
struct Body {
  std::string bytes;
  std::size_t sent = 0;
};

ssize_t read_body(nghttp2_session* /*session*/, std::int32_t /*stream*/, std::uint8_t* buffer,
                  std::size_t size, std::uint32_t* flags, nghttp2_data_source* source, void* /*user_data*/) {
  auto& body = *static_cast<Body*>(source->ptr);
  const std::size_t take = std::min(size, body.bytes.size() - body.sent);
  body.bytes.copy(reinterpret_cast<char*>(buffer), take, body.sent);
  body.sent += take;
  if (body.sent == body.bytes.size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
  }
  return static_cast<ssize_t>(take);
}

std::string framed(std::string_view request) {
  const auto size = static_cast<std::uint32_t>(request.size());
  std::string bytes = {'\0', static_cast<char>(size >> 24), static_cast<char>((size >> 16) & 0xff),
                       static_cast<char>((size >> 8) & 0xff), static_cast<char>(size & 0xff)};
  bytes.append(request);
  return bytes;
}

struct SessionDeleter {
  void operator()(nghttp2_session* session) const { nghttp2_session_del(session); }
};
using Session = std::unique_ptr<nghttp2_session, SessionDeleter>;

Result<Session> new_session(Answer& answer) {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) {
    return fail_code(k_internal, "HTTP/2: out of memory");
  }
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
  nghttp2_session_callbacks_set_error_callback2(callbacks, on_error);
  nghttp2_session* session = nullptr;
  const int made = nghttp2_session_client_new(&session, callbacks, &answer);
  nghttp2_session_callbacks_del(callbacks);
  if (made != 0) {
    return fail_code(k_internal, std::string("HTTP/2: ") + nghttp2_strerror(made));
  }
  return Session(session);
}

// A window as large as the largest message, so that the server never waits for our WINDOW_UPDATEs: the
// answer is bounded by its prefix, not by flow control.
constexpr std::int32_t k_window = std::int32_t{1} << 24;

Result<void> submit(nghttp2_session* session, const GrpcUnaryCall& call, Body& body, Answer& answer) {
  const std::array<nghttp2_settings_entry, 3> settings = {{
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(k_window)},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, k_max_grpc_header_bytes},
  }};
  int rv = nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
  if (rv == 0) {
    rv = nghttp2_session_set_local_window_size(session, NGHTTP2_FLAG_NONE, 0, k_window);
  }
  if (rv != 0) {
    return fail_code(k_internal, std::string("HTTP/2: ") + nghttp2_strerror(rv));
  }
  const std::string timeout = grpc_timeout(call.timeout);
  const auto field = [](std::string_view name, std::string_view value) {
    return nghttp2_nv{const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(name.data())),
                      const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(value.data())),
                      name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
  };
  const std::array<nghttp2_nv, 7> headers = {field(":method", "POST"),
                                             field(":scheme", "http"),
                                             field(":authority", "localhost"),
                                             field(":path", call.method),
                                             field("content-type", "application/grpc"),
                                             field("te", "trailers"),
                                             field("grpc-timeout", timeout)};
  nghttp2_data_provider provider{};
  provider.source.ptr = &body;
  provider.read_callback = read_body;
  const std::int32_t stream =
      nghttp2_submit_request(session, nullptr, headers.data(), headers.size(), &provider, nullptr);
  if (stream < 0) {
    return fail_code(k_internal, std::string("HTTP/2: ") + nghttp2_strerror(stream));
  }
  answer.set_stream(stream);
  return {};
}

Result<UniqueFd> connect_to(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    return fail_code(k_unavailable, "connect: the socket's path is too long");
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) {
    return fail_code(k_unavailable, std::string("socket: ") + std::strerror(errno));
  }
  // A unix socket connects at once or fails (EAGAIN: the listener's backlog is full): never in progress.
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return fail_code(k_unavailable, std::string("connect: ") + std::strerror(errno));
  }
  return fd;
}

// The session's I/O on the socket until the stream is closed, the session ends or the deadline passes.
class Exchange {
 public:
  Exchange(int fd, nghttp2_session* session, Answer& answer, Clock::time_point deadline)
      : m_fd(fd), m_session(session), m_answer(answer), m_deadline(deadline) {}

  Result<void> run() {
    while (!m_answer.closed()) {
      GPUCTK_TRY(fill_output());
      const bool want_read = nghttp2_session_want_read(m_session) != 0;
      if (!want_read && m_output.empty()) {
        return broken("the connection closed before the answer ended");
      }
      GPUCTK_TRY(wait(want_read));
    }
    return {};
  }

 private:
  // Everything nghttp2 has to send, serialized before the next read: a stream is open for nghttp2 only
  // once its HEADERS are serialized, and an answer read before that would be a protocol error. What it
  // queues is small (the request, SETTINGS and PING acknowledgements, WINDOW_UPDATEs) and nghttp2 refuses
  // a peer that floods it (NGHTTP2_ERR_FLOODED).
  Result<void> fill_output() {
    while (true) {
      const std::uint8_t* data = nullptr;
      const ssize_t size = nghttp2_session_mem_send(m_session, &data);
      if (size < 0) {
        return broken(nghttp2_strerror(static_cast<int>(size)));
      }
      if (size == 0) {
        return {};
      }
      m_output.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(size));
    }
  }

  Result<void> wait(bool want_read) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(m_deadline - Clock::now());
    if (left.count() <= 0) {
      return fail_code(4, "Deadline Exceeded");
    }
    pollfd ready{.fd = m_fd,
                 .events = static_cast<short>((want_read ? POLLIN : 0) | (m_output.empty() ? 0 : POLLOUT)),
                 .revents = 0};
    const int n = ::poll(&ready, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 60'000)));
    if (n < 0 && errno != EINTR) {
      return fail_code(k_unavailable, std::string("poll: ") + std::strerror(errno));
    }
    if (n <= 0) {
      return {};
    }
    if ((ready.revents & POLLOUT) != 0) {
      GPUCTK_TRY(write_some());
    }
    if ((ready.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      GPUCTK_TRY(read_some());
    }
    return {};
  }

  Result<void> write_some() {
    const ssize_t sent = ::send(m_fd, m_output.data(), m_output.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        return {};
      }
      return fail_code(k_unavailable, std::string("send: ") + std::strerror(errno));
    }
    m_output.erase(0, static_cast<std::size_t>(sent));
    return {};
  }

  Result<void> read_some() {
    std::array<std::uint8_t, 16384> buffer{};
    const ssize_t got = ::recv(m_fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (got < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        return {};
      }
      return fail_code(k_unavailable, std::string("recv: ") + std::strerror(errno));
    }
    if (got == 0) {
      return broken("the connection closed before the answer ended");
    }
    const ssize_t used = nghttp2_session_mem_recv(m_session, buffer.data(), static_cast<std::size_t>(got));
    if (m_answer.failure()) {
      return std::unexpected(*m_answer.failure());
    }
    if (used < 0) {
      return broken(nghttp2_strerror(static_cast<int>(used)));
    }
    return {};
  }

  // The connection failed: nghttp2's own reason when it gave one (it says more than its error code).
  std::unexpected<Error> broken(std::string_view what) const {
    if (!m_answer.library_error().empty()) {
      return fail_code(k_unavailable, "HTTP/2: " + m_answer.library_error());
    }
    return fail_code(k_unavailable, what);
  }

  int m_fd;
  nghttp2_session* m_session;
  Answer& m_answer;
  Clock::time_point m_deadline;
  std::string m_output;
};

int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

}  // namespace

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 && hex_digit(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

Result<std::string> grpc_unary(const GrpcUnaryCall& call) {
  const auto deadline = Clock::now() + call.timeout;
  GPUCTK_TRY_ASSIGN(const UniqueFd fd, connect_to(call.socket_path));
  Answer answer(-1, call.max_message);
  GPUCTK_TRY_ASSIGN(const Session session, new_session(answer));
  Body body{.bytes = framed(call.request), .sent = 0};
  GPUCTK_TRY(submit(session.get(), call, body, answer));
  GPUCTK_TRY(Exchange(fd.get(), session.get(), answer, deadline).run());
  return std::move(answer).result();
}

}  // namespace gpuctk::metrics
