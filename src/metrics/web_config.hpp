#pragma once
// gpuctk-exporter's --web-config-file: the web configuration file every Prometheus exporter shares
// (exporter-toolkit's format, read by Prometheus' own exporters as --web.config.file), so a node's
// existing file carries over:
//
//   tls_server_config:
//     cert_file: server.crt          # relative paths are relative to this file's folder
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert
//     client_ca_file: clients.crt
//     min_version: TLS12             # TLS10, TLS11, TLS12 (the default) or TLS13
//     max_version: TLS13             # the default
//   http_server_config:
//     headers:
//       Strict-Transport-Security: max-age=31536000
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt only, as htpasswd -nBC 10 writes it
//
// Read strictly, as the toolkit reads it (yaml.UnmarshalStrict): an unknown key is an error, never
// ignored; so is a key the toolkit has and gpuctk-exporter does not do (the inline cert, key and client_ca,
// cipher_suites, curve_preferences, prefer_server_cipher_suites, client_allowed_sans, http2: true,
// rate_limit): a file that asks for them gets them nowhere here, and must say so at start. `http2: false`
// is what gpuctk-exporter does anyway (HTTP/1.1), so it is taken. An empty file (or one of comments)
// means no TLS and no authentication.

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/password_check.hpp"
#include "util/error.hpp"

namespace gpuctk::metrics {

struct TlsSettings {
  std::string cert_pem, key_pem;     // file contents (cert_file, key_file)
  std::string client_ca_pem;         // client_ca_file's contents; "" when none
  bool require_client_cert = false;  // client_auth_type RequireAndVerifyClientCert
  // GnuTLS priority string from min/max_version, e.g. "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
  // (the defaults: TLS 1.2 to 1.3), newest version first.
  std::string gnutls_priorities;
};

struct WebConfig {
  std::optional<TlsSettings> tls;                                    // nullopt: plain HTTP
  std::map<std::string, std::string, std::less<>> basic_auth_users;  // user -> bcrypt hash; empty: no auth
  std::vector<std::pair<std::string, std::string>> headers;          // http_server_config.headers, file order
};

// Reads and checks the exporter-toolkit web config file (Prometheus exporters' --web.config.file). The
// file and the PEM files it names are read whole, at most 1 MiB each, regular files only (links are
// followed: Kubernetes mounts secrets through them; a FIFO or device is refused, never opened).
//
// Every error is one line that starts with the file and, where one applies, the line:
//   "<path>:3: tls_server_config.foo: unknown key"
//   "<path>:4: tls_server_config.cipher_suites: not supported by gpuctk-exporter (…why…)"
//   "<path>:2: tls_server_config: key_file without cert_file"
//   "<path>:5: tls_server_config.client_auth_type: \"VerifyClientCertIfGiven\" is not supported (NoClientCert
//    or RequireAndVerifyClientCert)"
//   "<path>:9: http_server_config.headers.Content-Type: cannot be configured (Content-Security-Policy,
//    Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options or X-XSS-Protection)"
//   "<path>:12: basic_auth_users.alice: not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04 to 31, 60 characters:
//    htpasswd -nBC 10 \"\" | tr -d ':\\n' writes one)"     (the value is never echoed: it may be a password)
//   "<path>:3: tls_server_config.cert_file: read /etc/x/server.crt: No such file or directory"
// What the toolkit checks, this checks too: cert_file and key_file together, client_ca_file only with
// RequireAndVerifyClientCert (which needs one here: there is no system CA pool to fall back on), header
// names from the toolkit's list and the values it enumerates (X-Frame-Options deny or sameorigin,
// X-Content-Type-Options nosniff), bcrypt hashes only, a key at most once per mapping. Beyond it: the
// PEM files must hold what their key says (a "-----BEGIN CERTIFICATE-----", a "PRIVATE KEY-----"), and a
// tls_server_config without a certificate (min_version alone) is an error rather than plain HTTP, a header
// value with a control character (a CR LF would add a header) and a user name with ':' (basic
// authentication ends the name there: no one could log in as it) are errors, more than one YAML document
// is an error. A header whose value is "" is not sent ("Unset if blank", the toolkit's documentation).
// Keys and values in messages are escaped (quote()).
Result<WebConfig> load_web_config(const std::string& path);

}  // namespace gpuctk::metrics
