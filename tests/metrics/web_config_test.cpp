// gpuctk-exporter's web config file (exporter-toolkit's format): every key it reads, every key and value
// it refuses with the exact line, relative paths, and the PEM files as it reads them.
#include "metrics/web_config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "support/temp_dir.hpp"

namespace gpuctk::metrics {
namespace {

constexpr std::string_view k_cert = "-----BEGIN CERTIFICATE-----\nMIIBserver\n-----END CERTIFICATE-----\n";
constexpr std::string_view k_key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n";
constexpr std::string_view k_ca = "-----BEGIN CERTIFICATE-----\nMIIBca\n-----END CERTIFICATE-----\n";

std::string bcrypt_like(char version, std::string_view cost) {
  return "$2" + std::string(1, version) + "$" + std::string(cost) + "$" + std::string(53, 'x');
}

class WebConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(m_dir.path().empty());
    m_dir.write("server.crt", k_cert);
    m_dir.write("server.key", k_key);
  }

  std::string write_config(std::string_view text) { return m_config = m_dir.write("web.yml", text); }

  WebConfig load_ok(std::string_view text) {
    auto config = load_web_config(write_config(text));
    EXPECT_TRUE(config) << config.error().message;
    return config.value_or(WebConfig{});
  }

  // The error, with the config file's path as CONFIG and the folder's as DIR.
  std::string error_of(std::string_view text) {
    auto config = load_web_config(write_config(text));
    EXPECT_FALSE(config) << text;
    return config ? std::string() : placeholders(config.error().message);
  }

  std::string placeholders(std::string message) const {
    for (const auto& [path, name] : {std::pair{m_config, "CONFIG"}, std::pair{m_dir.path(), "DIR"}}) {
      for (size_t at = 0; !path.empty() && (at = message.find(path, at)) != std::string::npos;
           at += std::string_view(name).size()) {
        message.replace(at, path.size(), name);
      }
    }
    return message;
  }

  test::TempDir m_dir{"gpuctk-webcfg"};
  std::string m_config;
};

TEST_F(WebConfigTest, AnEmptyFileMeansNoTlsAndNoAuthentication) {
  for (const std::string_view text :
       {"", "# nothing yet\n", "---\n", "tls_server_config:\nbasic_auth_users:\n",
        "tls_server_config: {}\nhttp_server_config: {headers: {}}\n"}) {
    const auto config = load_ok(text);
    EXPECT_FALSE(config.tls) << text;
    EXPECT_TRUE(config.basic_auth_users.empty()) << text;
    EXPECT_TRUE(config.headers.empty()) << text;
  }
}

TEST_F(WebConfigTest, EveryKeyItReads) {
  m_dir.write("ca/clients.crt", k_ca);
  const auto config = load_ok(R"(tls_server_config:
  cert_file: server.crt
  key_file: )" + m_dir.path() +
                              R"(/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca/clients.crt
  min_version: TLS13
  max_version: TLS13
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    Strict-Transport-Security: max-age=31536000; includeSubDomains
    X-Content-Type-Options: nosniff
    X-XSS-Protection: "1; mode=block"
    Content-Security-Policy: default-src 'self'
basic_auth_users:
  prometheus: )" + bcrypt_like('y', "10") +
                              R"(
  alice: ')" + bcrypt_like('a', "04") +
                              R"('
)");
  ASSERT_TRUE(config.tls);
  EXPECT_EQ(config.tls->cert_pem, k_cert);
  EXPECT_EQ(config.tls->key_pem, k_key);
  EXPECT_EQ(config.tls->client_ca_pem, k_ca);
  EXPECT_TRUE(config.tls->require_client_cert);
  EXPECT_EQ(config.tls->gnutls_priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3");
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"X-Frame-Options", "deny"},
      {"Strict-Transport-Security", "max-age=31536000; includeSubDomains"},
      {"X-Content-Type-Options", "nosniff"},
      {"X-XSS-Protection", "1; mode=block"},
      {"Content-Security-Policy", "default-src 'self'"},
  };
  EXPECT_EQ(config.headers, headers);
  const std::map<std::string, std::string, std::less<>> users = {{"alice", bcrypt_like('a', "04")},
                                                                 {"prometheus", bcrypt_like('y', "10")}};
  EXPECT_EQ(config.basic_auth_users, users);
}

TEST_F(WebConfigTest, TlsDefaultsAreTls12To13WithoutClientCertificates) {
  const auto config = load_ok("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  ASSERT_TRUE(config.tls);
  EXPECT_EQ(config.tls->gnutls_priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2");
  EXPECT_FALSE(config.tls->require_client_cert);
  EXPECT_EQ(config.tls->client_ca_pem, "");
  EXPECT_TRUE(config.basic_auth_users.empty());
}

TEST_F(WebConfigTest, VersionRangesNewestFirst) {
  const auto config = load_ok(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: "
      "NoClientCert\n"
      "  min_version: TLS10\n  max_version: TLS12\n");
  ASSERT_TRUE(config.tls);
  EXPECT_EQ(config.tls->gnutls_priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0");
  const auto one =
      load_ok("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  max_version: TLS12\n");
  ASSERT_TRUE(one.tls);
  EXPECT_EQ(one.tls->gnutls_priorities, "NORMAL:-VERS-ALL:+VERS-TLS1.2");
}

// The files are found beside the config file, wherever the process runs.
TEST_F(WebConfigTest, RelativePathsAreRelativeToTheConfigFilesFolder) {
  m_dir.write("conf/tls/a.crt", k_cert);
  m_dir.write("conf/tls/a.key", k_key);
  const std::string path = m_dir.write(
      "conf/web.yml", "tls_server_config:\n  cert_file: tls/a.crt\n  key_file: ./tls/../tls/a.key\n");
  const auto config = load_web_config(path);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->tls->cert_pem, k_cert);

  // A config file named without a folder: its folder is the working directory.
  const std::string before = std::filesystem::current_path().string();
  ASSERT_EQ(::chdir((m_dir.path() + "/conf").c_str()), 0);
  const auto here = load_web_config("web.yml");
  ASSERT_EQ(::chdir(before.c_str()), 0);
  ASSERT_TRUE(here) << here.error().message;
  EXPECT_EQ(here->tls->key_pem, k_key);

  const std::string missing =
      m_dir.write("conf/other.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: a.key\n");
  const auto error = load_web_config(missing);
  ASSERT_FALSE(error);
  EXPECT_EQ(placeholders(error.error().message),
            "DIR/conf/other.yml:2: tls_server_config.cert_file: read DIR/conf/server.crt: No such file or "
            "directory");
}

TEST_F(WebConfigTest, UnknownKeysAreNamedWithTheirLine) {
  EXPECT_EQ(error_of("basic_auth_users: {}\ntls_config: {}\n"), "CONFIG:2: tls_config: unknown key");
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: server.crt\n  foo: 1\n"),
            "CONFIG:3: tls_server_config.foo: unknown key");
  EXPECT_EQ(error_of("http_server_config:\n\n  header: {}\n"),
            "CONFIG:3: http_server_config.header: unknown key");
  EXPECT_EQ(error_of("Basic_Auth_Users: {}\n"), "CONFIG:1: Basic_Auth_Users: unknown key");
  // A key that is no plain name is quoted, its control characters escaped.
  EXPECT_EQ(error_of("\"bad\\e[31mkey\": 1\n"), "CONFIG:1: \"bad\\x1b[31mkey\": unknown key");
}

struct Refused {
  std::string_view text;
  std::string_view error;
};

void PrintTo(const Refused& refused, std::ostream* out) {
  *out << ::testing::PrintToString(refused.text);
}

class WebConfigRefusedTest : public WebConfigTest, public ::testing::WithParamInterface<Refused> {};

TEST_P(WebConfigRefusedTest, ExactError) {
  EXPECT_EQ(error_of(GetParam().text), GetParam().error);
}

// What exporter-toolkit has and gpuctk-exporter does not do: never ignored.
INSTANTIATE_TEST_SUITE_P(
    NotSupported, WebConfigRefusedTest,
    ::testing::Values(
        Refused{
            "rate_limit:\n  interval: 1s\n  burst: 5\n",
            "CONFIG:1: rate_limit: not supported by gpuctk-exporter (gpuctk-exporter has no rate limiter)"},
        Refused{
            "tls_server_config:\n  cert: abc\n",
            "CONFIG:2: tls_server_config.cert: not supported by gpuctk-exporter (no inline certificate: use "
            "cert_file)"},
        Refused{"tls_server_config:\n  key: abc\n",
                "CONFIG:2: tls_server_config.key: not supported by gpuctk-exporter (no inline key: use "
                "key_file)"},
        Refused{"tls_server_config:\n  client_ca: abc\n",
                "CONFIG:2: tls_server_config.client_ca: not supported by gpuctk-exporter (no inline client "
                "CAs: use "
                "client_ca_file)"},
        Refused{
            "tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
            "CONFIG:2: tls_server_config.cipher_suites: not supported by gpuctk-exporter (GnuTLS's NORMAL "
            "priorities choose the cipher suites)"},
        Refused{"tls_server_config:\n  curve_preferences: [X25519]\n",
                "CONFIG:2: tls_server_config.curve_preferences: not supported by gpuctk-exporter (GnuTLS's "
                "NORMAL "
                "priorities choose the curves)"},
        Refused{"tls_server_config:\n  prefer_server_cipher_suites: true\n",
                "CONFIG:2: tls_server_config.prefer_server_cipher_suites: not supported by gpuctk-exporter "
                "(GnuTLS's NORMAL priorities choose the order)"},
        Refused{"tls_server_config:\n  client_allowed_sans: [a.example]\n",
                "CONFIG:2: tls_server_config.client_allowed_sans: not supported by gpuctk-exporter (client "
                "certificates are checked against client_ca_file only)"},
        Refused{"http_server_config:\n  http2: true\n",
                "CONFIG:2: http_server_config.http2: true is not supported: gpuctk-exporter serves HTTP/1.1 "
                "(false, or leave it out)"},
        Refused{"http_server_config:\n  http2: maybe\n",
                "CONFIG:2: http_server_config.http2: expected true or false"}));

// client_auth_type and the versions: what the toolkit knows and gpuctk-exporter does not do, and what
// neither knows.
INSTANTIATE_TEST_SUITE_P(
    TlsValues, WebConfigRefusedTest,
    ::testing::Values(
        Refused{"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: "
                "RequestClientCert\n",
                "CONFIG:4: tls_server_config.client_auth_type: \"RequestClientCert\" is not supported "
                "(NoClientCert or RequireAndVerifyClientCert)"},
        Refused{"tls_server_config:\n  client_auth_type: RequireAnyClientCert\n",
                "CONFIG:2: tls_server_config.client_auth_type: \"RequireAnyClientCert\" is not supported "
                "(NoClientCert or RequireAndVerifyClientCert)"},
        Refused{"tls_server_config:\n  client_auth_type: RequireClientCert\n",
                "CONFIG:2: tls_server_config.client_auth_type: \"RequireClientCert\" is not supported "
                "(NoClientCert or RequireAndVerifyClientCert)"},
        Refused{"tls_server_config:\n  client_auth_type: VerifyClientCertIfGiven\n",
                "CONFIG:2: tls_server_config.client_auth_type: \"VerifyClientCertIfGiven\" is not supported "
                "(NoClientCert or RequireAndVerifyClientCert)"},
        Refused{"tls_server_config:\n  client_auth_type: requireandverifyclientcert\n",
                "CONFIG:2: tls_server_config.client_auth_type: unknown client_auth_type "
                "\"requireandverifyclientcert\" (NoClientCert or RequireAndVerifyClientCert)"},
        Refused{
            "tls_server_config:\n  min_version: TLS1.2\n",
            "CONFIG:2: tls_server_config.min_version: unknown TLS version \"TLS1.2\" (TLS10, TLS11, TLS12 or "
            "TLS13)"},
        Refused{
            "tls_server_config:\n  max_version: SSL30\n",
            "CONFIG:2: tls_server_config.max_version: unknown TLS version \"SSL30\" (TLS10, TLS11, TLS12 or "
            "TLS13)"},
        Refused{"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n"
                "  max_version: TLS12\n",
                "CONFIG:1: tls_server_config: min_version TLS13 is above max_version TLS12"}));

// A tls_server_config that cannot serve TLS as written.
INSTANTIATE_TEST_SUITE_P(
    TlsWhole, WebConfigRefusedTest,
    ::testing::Values(
        Refused{"tls_server_config:\n  cert_file: server.crt\n",
                "CONFIG:1: tls_server_config: cert_file without key_file"},
        Refused{"basic_auth_users: {}\ntls_server_config:\n  key_file: server.key\n",
                "CONFIG:2: tls_server_config: key_file without cert_file"},
        Refused{
            "tls_server_config:\n  min_version: TLS13\n",
            "CONFIG:1: tls_server_config: cert_file and key_file are required (leave tls_server_config out "
            "for plain HTTP)"},
        Refused{
            "tls_server_config:\n  cert_file: \"\"\n  key_file:\n",
            "CONFIG:1: tls_server_config: cert_file and key_file are required (leave tls_server_config out "
            "for plain HTTP)"},
        Refused{
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: "
            "server.crt\n",
            "CONFIG:4: tls_server_config.client_ca_file: needs client_auth_type RequireAndVerifyClientCert"},
        Refused{
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: "
            "NoClientCert\n"
            "  client_ca_file: server.crt\n",
            "CONFIG:5: tls_server_config.client_ca_file: needs client_auth_type RequireAndVerifyClientCert"},
        Refused{"tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                "  client_auth_type: RequireAndVerifyClientCert\n",
                "CONFIG:1: tls_server_config: client_auth_type RequireAndVerifyClientCert needs "
                "client_ca_file"}));

// The toolkit's header list (extraHTTPHeaders): every other header is refused, names as it spells them.
INSTANTIATE_TEST_SUITE_P(
    Headers, WebConfigRefusedTest,
    ::testing::Values(
        Refused{"http_server_config:\n  headers:\n    Authorization: Basic x\n",
                "CONFIG:3: http_server_config.headers.Authorization: cannot be configured "
                "(Content-Security-Policy, "
                "Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options or X-XSS-Protection)"},
        Refused{"http_server_config:\n  headers:\n    Content-Type: text/html\n",
                "CONFIG:3: http_server_config.headers.Content-Type: cannot be configured "
                "(Content-Security-Policy, "
                "Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options or X-XSS-Protection)"},
        Refused{"http_server_config:\n  headers:\n    x-frame-options: deny\n",
                "CONFIG:3: http_server_config.headers.x-frame-options: cannot be configured "
                "(Content-Security-Policy, "
                "Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options or X-XSS-Protection)"},
        Refused{
            "http_server_config:\n  headers:\n    X-Frame-Options: allow-from x\n",
            "CONFIG:3: http_server_config.headers.X-Frame-Options: \"allow-from x\" is not allowed (deny or "
            "sameorigin)"},
        Refused{"http_server_config:\n  headers:\n    X-Frame-Options: DENY\n",
                "CONFIG:3: http_server_config.headers.X-Frame-Options: \"DENY\" is not allowed (deny or "
                "sameorigin)"},
        Refused{"http_server_config:\n  headers:\n    X-Content-Type-Options: \"\"\n",
                "CONFIG:3: http_server_config.headers.X-Content-Type-Options: \"\" is not allowed (nosniff)"},
        Refused{
            "http_server_config:\n  headers:\n    X-XSS-Protection: \"1\\r\\nSet-Cookie: a=b\"\n",
            "CONFIG:3: http_server_config.headers.X-XSS-Protection: \"1\\x0d\\nSet-Cookie: a=b\": control "
            "characters in a header value"},
        Refused{"http_server_config:\n  headers:\n    - X-Frame-Options\n",
                "CONFIG:3: http_server_config.headers: expected a mapping"}));

// basic_auth_users: bcrypt hashes only; the value is never echoed (it may be a password).
INSTANTIATE_TEST_SUITE_P(
    Users, WebConfigRefusedTest,
    ::testing::Values(
        Refused{"basic_auth_users:\n  alice: hunter2\n",
                "CONFIG:2: basic_auth_users.alice: not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04 to 31, 60 "
                "characters: htpasswd -nBC 10 \"\" | tr -d ':\\n' writes one)"},
        Refused{"basic_auth_users:\n  alice:\n",
                "CONFIG:2: basic_auth_users.alice: not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04 to 31, 60 "
                "characters: htpasswd -nBC 10 \"\" | tr -d ':\\n' writes one)"},
        Refused{"basic_auth_users:\n  bob: $1$abc$0123456789012345678901\n",
                "CONFIG:2: basic_auth_users.bob: not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04 to 31, 60 "
                "characters: htpasswd -nBC 10 \"\" | tr -d ':\\n' writes one)"},
        Refused{"basic_auth_users:\n  bob: $2x$10$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
                "CONFIG:2: basic_auth_users.bob: not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04 to 31, 60 "
                "characters: htpasswd -nBC 10 \"\" | tr -d ':\\n' writes one)"},
        Refused{"basic_auth_users:\n  bob: [a]\n", "CONFIG:2: basic_auth_users.bob: expected a string"},
        Refused{
            "basic_auth_users:\n  \"a:b\": $2y$10$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
            "CONFIG:2: basic_auth_users.\"a:b\": a user name with ':' can never log in (basic authentication "
            "ends it at the first ':')"},
        Refused{"basic_auth_users: [alice]\n", "CONFIG:1: basic_auth_users: expected a mapping"}));

// What is no web config file at all.
INSTANTIATE_TEST_SUITE_P(
    Shape, WebConfigRefusedTest,
    ::testing::Values(
        Refused{"- tls_server_config\n", "CONFIG:1: expected a mapping"},
        Refused{"just text\n", "CONFIG:1: expected a mapping"},
        Refused{"tls_server_config: yes\n", "CONFIG:1: tls_server_config: expected a mapping"},
        Refused{"tls_server_config:\n  cert_file: [a, b]\n",
                "CONFIG:2: tls_server_config.cert_file: expected a string"},
        Refused{"? [a]\n: b\n", "CONFIG:1: a key must be a string"},
        Refused{"basic_auth_users: {}\nbasic_auth_users: {}\n", "CONFIG:2: basic_auth_users: given twice"},
        Refused{"tls_server_config:\n  cert_file: a\n  cert_file: b\n",
                "CONFIG:3: tls_server_config.cert_file: given twice"},
        Refused{"basic_auth_users:\n  a: $2y$10$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                "  a: $2y$10$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
                "CONFIG:3: basic_auth_users.a: given twice"},
        Refused{"basic_auth_users: {}\n---\nrate_limit: {}\n", "CONFIG: more than one YAML document"},
        Refused{"tls_server_config:\n  cert_file: [\n", "CONFIG:3: YAML: end of sequence flow not found"}));

TEST_F(WebConfigTest, AnEmptyHeaderValueSetsNoHeader) {
  const auto config = load_ok(
      "http_server_config:\n  headers:\n    Content-Security-Policy: \"\"\n    X-XSS-Protection: '0'\n");
  const std::vector<std::pair<std::string, std::string>> headers = {{"X-XSS-Protection", "0"}};
  EXPECT_EQ(config.headers, headers);
}

TEST_F(WebConfigTest, TheConfigFileItselfIsReadBoundedAndRegular) {
  EXPECT_EQ(placeholders(load_web_config(m_dir.path() + "/none.yml").error().message),
            "read DIR/none.yml: No such file or directory");
  EXPECT_EQ(placeholders(load_web_config(m_dir.path()).error().message), "read DIR: not a regular file");
  const std::string fifo = m_dir.path() + "/fifo.yml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(placeholders(load_web_config(fifo).error().message), "read DIR/fifo.yml: not a regular file");
  EXPECT_EQ(error_of("# " + std::string(1 << 20, 'x') + "\n"), "read CONFIG: larger than 1048576 bytes");
  // 1 MiB exactly is read.
  const std::string padding = "# " + std::string((1 << 20) - 3, 'x') + "\n";
  EXPECT_FALSE(load_ok(padding).tls);
}

TEST_F(WebConfigTest, ThePemFilesAreReadBoundedRegularAndChecked) {
  const std::string tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: ";
  EXPECT_EQ(error_of(tls + "missing.key\n"),
            "CONFIG:3: tls_server_config.key_file: read DIR/missing.key: No such file or directory");
  ASSERT_EQ(::mkfifo((m_dir.path() + "/fifo.key").c_str(), 0600), 0);
  EXPECT_EQ(error_of(tls + "fifo.key\n"),
            "CONFIG:3: tls_server_config.key_file: read DIR/fifo.key: not a regular file");
  m_dir.write("big.key", std::string(k_key) + std::string(1 << 20, '\n'));
  EXPECT_EQ(error_of(tls + "big.key\n"),
            "CONFIG:3: tls_server_config.key_file: read DIR/big.key: larger than 1048576 bytes");
  EXPECT_EQ(error_of(tls + "server.crt\n"),
            "CONFIG:3: tls_server_config.key_file: DIR/server.crt: no PEM private key (-----BEGIN … PRIVATE "
            "KEY-----)");
  m_dir.write("junk.crt", "not a certificate\n");
  EXPECT_EQ(error_of("tls_server_config:\n  key_file: server.key\n  cert_file: junk.crt\n"),
            "CONFIG:3: tls_server_config.cert_file: DIR/junk.crt: no PEM certificate (-----BEGIN "
            "CERTIFICATE-----)");
  EXPECT_EQ(
      error_of(tls +
               "server.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: server.key\n"),
      "CONFIG:5: tls_server_config.client_ca_file: DIR/server.key: no PEM certificate (-----BEGIN "
      "CERTIFICATE-----)");
  // A link is followed (Kubernetes mounts a secret's files as links into ..data/).
  ASSERT_EQ(::symlink("server.key", (m_dir.path() + "/link.key").c_str()), 0);
  const auto config = load_ok(tls + "link.key\n");
  ASSERT_TRUE(config.tls);
  EXPECT_EQ(config.tls->key_pem, k_key);
}

}  // namespace
}  // namespace gpuctk::metrics
