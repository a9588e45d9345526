// Credentials as client-go finds them: a kubeconfig's current context (every refusal by name) and the
// in-cluster service account.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kube/client.hpp"
#include "kube/kubeconfig.hpp"
#include "support/temp_dir.hpp"

namespace gpuctk::kube {
namespace {

constexpr std::string_view k_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
// k_pem in base64.
constexpr std::string_view k_pem_base64 =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=";

// A kubeconfig of one context "c" with cluster and user bodies as given (YAML at their indentation).
std::string kubeconfig(std::string_view cluster, std::string_view user) {
  return "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
         "contexts:\n- name: other\n  context: {cluster: nope, user: nope}\n"
         "- name: c\n  context:\n    cluster: k\n    user: u\n    namespace: ns1\n"
         "clusters:\n- name: k\n  cluster:\n" +
         std::string(cluster) + "users:\n- name: u\n  user:\n" + std::string(user);
}

Credentials parse_ok(const std::string& text, std::string_view dir = "/etc/kube") {
  auto credentials = parse_kubeconfig(text, dir);
  EXPECT_TRUE(credentials) << credentials.error().message;
  return credentials.value_or(Credentials{});
}

std::string parse_error(const std::string& text) {
  auto credentials = parse_kubeconfig(text, "/etc/kube");
  EXPECT_FALSE(credentials) << text;
  return credentials ? std::string() : credentials.error().message;
}

TEST(Kubeconfig, TokenFileAndCaFileResolvedAgainstTheFolder) {
  const Credentials c =
      parse_ok(kubeconfig("    server: https://10.0.0.1:6443\n    certificate-authority: pki/ca.crt\n",
                          "    tokenFile: /var/run/token\n"));
  EXPECT_EQ(c.server, "https://10.0.0.1:6443");
  EXPECT_EQ(c.ca_file, "/etc/kube/pki/ca.crt");
  EXPECT_EQ(c.ca_pem, "");
  EXPECT_EQ(c.token_file, "/var/run/token");
  EXPECT_EQ(c.token, "");
  EXPECT_EQ(c.namespace_name, "ns1");
  EXPECT_EQ(c.client_cert_file, "");
}

TEST(Kubeconfig, DataFormsAreDecodedAndWinOverFiles) {
  const std::string b64(k_pem_base64);
  const Credentials c = parse_ok(kubeconfig(
      "    server: https://k\n    certificate-authority: ca.crt\n"
      "    certificate-authority-data: " +
          b64 + "\n",
      "    token: abc\n    client-certificate-data: " + b64 + "\n    client-key-data: " + b64 + "\n"));
  EXPECT_EQ(c.ca_pem, k_pem);
  EXPECT_EQ(c.ca_file, "");
  EXPECT_EQ(c.client_cert_pem, k_pem);
  EXPECT_EQ(c.client_key_pem, k_pem);
  EXPECT_EQ(c.token, "abc");
}

TEST(Kubeconfig, ClientCertificateFilesAndAnInsecureFalse) {
  const Credentials c = parse_ok(kubeconfig("    server: https://k\n    insecure-skip-tls-verify: false\n",
                                            "    client-certificate: u.crt\n    client-key: /k/u.key\n"),
                                 "/home/me/.kube");
  EXPECT_EQ(c.client_cert_file, "/home/me/.kube/u.crt");
  EXPECT_EQ(c.client_key_file, "/k/u.key");
}

TEST(Kubeconfig, EveryRefusalNamesWhatAndWhy) {
  const std::map<std::string, std::string> users = {
      {"    exec:\n      command: aws\n",
       "user \"u\": exec credential plugins are not supported (give a token, tokenFile or client "
       "certificate)"},
      {"    auth-provider:\n      name: gcp\n",
       "user \"u\": auth-provider plugins are not supported (give a token, tokenFile or client certificate)"},
      {"    username: admin\n    password: x\n", "user \"u\": basic authentication is not supported"},
      {"    client-certificate: u.crt\n",
       "user \"u\": a client certificate needs its key, and a key its certificate"},
      {"    client-key-data: '!!!'\n", "user \"u\": client-key-data is not base64"},
      {"    client-key-data: aGVsbG8=\n", "user \"u\": client-key-data is not PEM"},
  };
  for (const auto& [user, message] : users) {
    EXPECT_EQ(parse_error(kubeconfig("    server: https://k\n", user)), message) << user;
  }
  const std::map<std::string, std::string> clusters = {
      {"    server: https://k\n    insecure-skip-tls-verify: true\n",
       "cluster \"k\": insecure-skip-tls-verify is refused: TLS verification is always on"},
      {"    server: https://k\n    proxy-url: http://p\n", "cluster \"k\": proxies are not supported"},
      {"    certificate-authority: ca.crt\n", "cluster \"k\": no server"},
      {"    server: [a]\n", "cluster \"k\": server is not a string"},
  };
  for (const auto& [cluster, message] : clusters) {
    EXPECT_EQ(parse_error(kubeconfig(cluster, "    token: t\n")), message) << cluster;
  }
}

TEST(Kubeconfig, ContextsClustersAndUsersMustBeThere) {
  EXPECT_EQ(parse_error("apiVersion: v1\nclusters: []\n"), "no current-context");
  EXPECT_EQ(parse_error("current-context: x\ncontexts:\n- name: y\n  context: {}\n"),
            "context \"x\" not found");
  EXPECT_EQ(parse_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: k, user: u}\n"),
            "cluster \"k\" not found");
  EXPECT_EQ(parse_error("current-context: x\ncontexts:\n- name: x\n  context: {cluster: k, user: u}\n"
                        "clusters:\n- name: k\n  cluster: {server: 'https://k'}\n"),
            "user \"u\" not found");
  EXPECT_EQ(parse_error("- a list\n"), "not a kubeconfig (a YAML mapping)");
  EXPECT_EQ(parse_error("current-context: [\n").substr(0, 6), "YAML: ");
}

TEST(Kubeconfig, AContextWithoutAUserIsAnonymous) {
  const Credentials c = parse_ok(
      "current-context: x\ncontexts:\n- name: x\n  context: {cluster: k}\n"
      "clusters:\n- name: k\n  cluster: {server: 'https://k'}\n");
  EXPECT_EQ(c.server, "https://k");
  EXPECT_EQ(c.token, "");
  EXPECT_EQ(c.token_file, "");
}

TEST(Kubeconfig, FromAFileNamesItAndResolvesAgainstItsFolder) {
  test::TempDir dir("gpuctk-kube");
  const std::string path = dir.write(
      "conf/kubeconfig",
      kubeconfig("    server: https://k\n    certificate-authority: ca.crt\n", "    tokenFile: token\n"));
  auto c = from_kubeconfig(path);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->ca_file, dir.path() + "/conf/ca.crt");
  EXPECT_EQ(c->token_file, dir.path() + "/conf/token");
  EXPECT_EQ(c->origin, "kubeconfig " + path);

  const std::string bad = dir.write("bad", "current-context: x\n");
  EXPECT_EQ(from_kubeconfig(bad).error().message, "kubeconfig " + bad + ": context \"x\" not found");
  EXPECT_EQ(from_kubeconfig(dir.path() + "/none").error().message,
            "read " + dir.path() + "/none: No such file or directory");
  EXPECT_EQ(load_credentials(path, [](const char*) { return nullptr; })->origin, "kubeconfig " + path);
}

TEST(InCluster, ServerFromTheVariables) {
  EXPECT_EQ(in_cluster_server("10.96.0.1", "443").value(), "https://10.96.0.1:443");
  EXPECT_EQ(in_cluster_server("fd00::1", "6443").value(), "https://[fd00::1]:6443");
  EXPECT_EQ(in_cluster_server("kubernetes.default.svc", "443").value(), "https://kubernetes.default.svc:443");
  EXPECT_EQ(in_cluster_server("a/b@c", "443").error().message,
            "KUBERNETES_SERVICE_HOST \"a/b@c\" is not a host name or address");
  EXPECT_EQ(in_cluster_server("h", "70000").error().message,
            "KUBERNETES_SERVICE_PORT \"70000\" is not a port");
  EXPECT_EQ(in_cluster_server("h", "").error().message, "KUBERNETES_SERVICE_PORT \"\" is not a port");
}

TEST(InCluster, TheServiceAccountsFiles) {
  test::TempDir dir("gpuctk-kube");
  dir.write("token", "eyJhbGciOi.x.y\n");
  dir.write("ca.crt", k_pem);
  dir.write("namespace", "gpu-operator\n");
  const std::map<std::string, const char*> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                                  {"KUBERNETES_SERVICE_PORT", "443"}};
  const auto getenv = [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second;
  };
  auto c = in_cluster(getenv, dir.path());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->server, "https://10.96.0.1:443");
  EXPECT_EQ(c->token_file, dir.path() + "/token");
  EXPECT_EQ(c->ca_file, dir.path() + "/ca.crt");
  EXPECT_EQ(c->namespace_name, "gpu-operator");
  EXPECT_EQ(c->origin, "in-cluster service account");

  test::TempDir empty("gpuctk-kube");
  EXPECT_EQ(in_cluster(getenv, empty.path()).error().message,
            "in-cluster: read " + empty.path() + "/token: No such file or directory");
  EXPECT_EQ(
      load_credentials("", [](const char*) { return nullptr; }).error().message,
      "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not in a pod: give a "
      "kubeconfig)");
}

TEST(KubeToken, OneLineOfPrintableText) {
  EXPECT_EQ(check_token("  abc.def\n").value(), "abc.def");
  EXPECT_EQ(check_token("\n").error().message, "empty");
  EXPECT_EQ(check_token("abc\r\nX-Injected: 1").error().message, "holds a space or a control character");
  EXPECT_EQ(check_token("a b").error().message, "holds a space or a control character");
}

TEST(KubeClient, OnlyHttpsAndReadableFiles) {
  Credentials c;
  c.server = "http://127.0.0.1:8080";
  EXPECT_EQ(Client::create(c).error().message,
            "server \"http://127.0.0.1:8080\": only https:// is supported");
  c.server = "https://127.0.0.1:1";
  c.ca_file = "/nonexistent/ca.crt";
  EXPECT_EQ(Client::create(c).error().message,
            "certificate authority: read /nonexistent/ca.crt: No such file or directory");
}

}  // namespace
}  // namespace gpuctk::kube
