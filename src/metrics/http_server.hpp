#pragma once
// gpuctk-exporter's HTTP side (libmicrohttpd, one internal polling thread): GET and HEAD of /metrics (the
// collector's last exposition), /health (200 "ok", or 503 and why NVML is lost) and / (a page linking
// /metrics); 405 for any other method, 404 for any other path. With a web config (the Prometheus
// exporters' --web.config.file): TLS from its TlsSettings, client certificates verified when it requires
// them, basic auth for every path (401 with WWW-Authenticate: Basic realm="gpuctk-exporter"), and its
// extra headers on every answer. Built into gpuctk-exporter only (it links libmicrohttpd and libcrypt).

#include <memory>
#include <string>

#include "metrics/collector.hpp"
#include "metrics/listen_address.hpp"
#include "metrics/web_config.hpp"
#include "util/error.hpp"

struct MHD_Daemon;

namespace gpuctk::metrics {

// At most this many connections at once; more wait in the listen queue. Prometheus keeps one per target.
inline constexpr unsigned k_max_connections = 64;
// An idle connection is closed after this many seconds (a client that stops mid-request holds nothing).
inline constexpr unsigned k_connection_timeout_s = 30;

class HttpServer {
 public:
  // Serves `published` on `listener` until destroyed. Errors: "http: start: <why>" (MHD refuses the
  // options, e.g. a key GnuTLS cannot read).
  static Result<std::unique_ptr<HttpServer>> start(Listener listener, const WebConfig& config,
                                                   const Published& published);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  struct State;

 private:
  explicit HttpServer(std::unique_ptr<State> state);
  std::unique_ptr<State> m_state;
};

}  // namespace gpuctk::metrics
