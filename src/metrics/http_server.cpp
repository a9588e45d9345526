#include "metrics/http_server.hpp"

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/password_check.hpp"
#include "util/strings.hpp"

namespace gpuctk::metrics {

struct HttpServer::State {
  explicit State(const Published& from) : published(from) {}
  const Published& published;
  std::optional<TlsSettings> tls;            // MHD reads the PEM texts from here
  std::unique_ptr<PasswordCheck> passwords;  // null: no basic auth
  std::vector<std::pair<std::string, std::string>> headers;
  std::string start_error;  // what MHD logged while starting; later messages are dropped
  std::atomic<bool> starting{true};
  MHD_Daemon* daemon = nullptr;
};

namespace {

using State = HttpServer::State;

constexpr const char* k_text = "text/plain; charset=utf-8";
// The exposition format's content type, as Prometheus' client libraries and dcgm-exporter send it.
constexpr const char* k_exposition = "text/plain; version=0.0.4; charset=utf-8";
// Relative links, as dcgm-exporter's page has them: they hold behind a proxy's path prefix.
constexpr std::string_view k_index =
    "<html>\n<head><title>gpuctk-exporter</title></head>\n<body>\n<h1>gpuctk-exporter</h1>\n"
    "<p><a href=\"./metrics\">Metrics</a></p>\n<p><a href=\"./health\">Health</a></p>\n</body>\n</html>\n";

// MHD's messages while it starts become the start error; afterwards they would be one line per bad
// client (a TLS handshake from a port scanner), so they are dropped.
void log_mhd(void* cls, const char* format, va_list args) {
  auto& state = *static_cast<State*>(cls);
  if (!state.starting) {
    return;
  }
  char text[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"  // MHD's own format strings
  std::vsnprintf(text, sizeof text, format, args);
#pragma GCC diagnostic pop
  std::string_view line(text);
  while (line.ends_with('\n')) {
    line.remove_suffix(1);
  }
  state.start_error = escape_for_log(line);
}

MHD_Result queue(const State& state, MHD_Connection* connection, unsigned status, MHD_Response* response,
                 const char* content_type) {
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  for (const auto& [name, value] : state.headers) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  const auto queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result queue_text(const State& state, MHD_Connection* connection, unsigned status, std::string_view body,
                      const char* content_type = k_text) {
  auto* response =
      MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  return response == nullptr ? MHD_NO : queue(state, connection, status, response, content_type);
}

// The published text itself, held by the response until MHD has sent it: a scrape copies nothing.
MHD_Result queue_metrics(const State& state, MHD_Connection* connection) {
  auto held = std::make_unique<std::shared_ptr<const std::string>>(state.published.get().metrics);
  const auto& text = **held;
  auto* response = MHD_create_response_from_buffer_with_free_callback_cls(
      text.size(), const_cast<char*>(text.data()),
      [](void* cls) { delete static_cast<std::shared_ptr<const std::string>*>(cls); }, held.get());
  if (response == nullptr) {
    return MHD_NO;
  }
  held.release();  // NOLINT(bugprone-unused-return-value): the response owns it now
  return queue(state, connection, MHD_HTTP_OK, response, k_exposition);
}

MHD_Result queue_health(const State& state, MHD_Connection* connection) {
  const auto unhealthy = state.published.get().unhealthy;
  if (unhealthy.empty()) {
    return queue_text(state, connection, MHD_HTTP_OK, "ok\n");
  }
  return queue_text(state, connection, MHD_HTTP_SERVICE_UNAVAILABLE, escape_for_log(unhealthy) + "\n");
}

MHD_Result queue_unauthorized(const State& state, MHD_Connection* connection) {
  auto* response =
      MHD_create_response_from_buffer(13, const_cast<char*>("Unauthorized\n"), MHD_RESPMEM_PERSISTENT);
  if (response == nullptr) {
    return MHD_NO;
  }
  MHD_add_response_header(response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"gpuctk-exporter\"");
  return queue(state, connection, MHD_HTTP_UNAUTHORIZED, response, k_text);
}

MHD_Result queue_not_allowed(const State& state, MHD_Connection* connection) {
  auto* response =
      MHD_create_response_from_buffer(19, const_cast<char*>("Method Not Allowed\n"), MHD_RESPMEM_PERSISTENT);
  if (response == nullptr) {
    return MHD_NO;
  }
  MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  return queue(state, connection, MHD_HTTP_METHOD_NOT_ALLOWED, response, k_text);
}

// The client's certificate, checked against the client CA by GnuTLS (MHD asks for one when it has a
// trust list). The exporter toolkit refuses the handshake; MHD cannot, so the connection is closed
// before any answer instead.
bool client_verified(MHD_Connection* connection) {
  const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) {
    return false;
  }
  unsigned status = 0;
  const auto session = static_cast<gnutls_session_t>(info->tls_session);
  return gnutls_certificate_verify_peers2(session, &status) == GNUTLS_E_SUCCESS && status == 0;
}

bool authorized(State& state, MHD_Connection* connection) {
  char* password = nullptr;
  char* user = MHD_basic_auth_get_username_password(connection, &password);
  const bool allowed = user != nullptr && password != nullptr && state.passwords->allowed(user, password);
  MHD_free(user);
  MHD_free(password);
  return allowed;
}

MHD_Result route(const State& state, MHD_Connection* connection, std::string_view url) {
  if (url == "/metrics") {
    return queue_metrics(state, connection);
  }
  if (url == "/health") {
    return queue_health(state, connection);
  }
  if (url == "/") {
    return queue_text(state, connection, MHD_HTTP_OK, k_index, "text/html; charset=utf-8");
  }
  return queue_text(state, connection, MHD_HTTP_NOT_FOUND, "404 page not found\n");
}

MHD_Result answer(void* cls, MHD_Connection* connection, const char* url, const char* method,
                  const char* /*version*/, const char* /*upload_data*/, size_t* upload_data_size,
                  void** req_cls) {
  // The first call only has the headers: answering then makes MHD close the connection after the
  // answer (it cannot know the body is done), which would cost Prometheus a new connection (and a TLS
  // handshake) per scrape. So the first call is taken, a body is dropped, and the last call answers.
  static int k_seen = 0;
  if (*req_cls == nullptr) {
    *req_cls = &k_seen;
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    *upload_data_size = 0;  // a body (no route takes one) is read and dropped
    return MHD_YES;
  }
  auto& state = *static_cast<State*>(cls);
  if (state.tls && state.tls->require_client_cert && !client_verified(connection)) {
    return MHD_NO;
  }
  if (state.passwords && !authorized(state, connection)) {
    return queue_unauthorized(state, connection);
  }
  const std::string_view verb(method);
  if (verb != MHD_HTTP_METHOD_GET && verb != MHD_HTTP_METHOD_HEAD) {
    return queue_not_allowed(state, connection);
  }
  return route(state, connection, url);
}

std::vector<MHD_OptionItem> daemon_options(int listen_fd, const std::optional<TlsSettings>& tls) {
  std::vector<MHD_OptionItem> options = {
      {MHD_OPTION_LISTEN_SOCKET, listen_fd, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, k_max_connections, nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, k_connection_timeout_s, nullptr},
  };
  if (tls) {
    options.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, const_cast<char*>(tls->cert_pem.c_str())});
    options.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, const_cast<char*>(tls->key_pem.c_str())});
    if (!tls->gnutls_priorities.empty()) {
      options.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(tls->gnutls_priorities.c_str())});
    }
    if (!tls->client_ca_pem.empty()) {
      options.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, const_cast<char*>(tls->client_ca_pem.c_str())});
    }
  }
  options.push_back({MHD_OPTION_END, 0, nullptr});
  return options;
}

}  // namespace

Result<std::unique_ptr<HttpServer>> HttpServer::start(Listener listener, const WebConfig& config,
                                                      const Published& published) {
  auto state = std::make_unique<State>(published);
  state->tls = config.tls;
  state->headers = config.headers;
  if (!config.basic_auth_users.empty()) {
    state->passwords = std::make_unique<PasswordCheck>(config.basic_auth_users);
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
  if (state->tls) {
    flags |= MHD_USE_TLS;
  }
  auto options = daemon_options(listener.fd.get(), state->tls);
  state->daemon =
      MHD_start_daemon(flags, 0, nullptr, nullptr, &answer, state.get(), MHD_OPTION_EXTERNAL_LOGGER, &log_mhd,
                       state.get(), MHD_OPTION_ARRAY, options.data(), MHD_OPTION_END);
  if (state->daemon == nullptr) {
    return fail("http: start: " +
                (state->start_error.empty() ? "libmicrohttpd refused" : state->start_error));
  }
  listener.fd.release();  // the daemon closes it when it stops
  state->starting = false;
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(state)));
}

HttpServer::HttpServer(std::unique_ptr<State> state) : m_state(std::move(state)) {}

HttpServer::~HttpServer() {
  if (m_state && m_state->daemon != nullptr) {
    MHD_stop_daemon(m_state->daemon);
  }
}

}  // namespace gpuctk::metrics
