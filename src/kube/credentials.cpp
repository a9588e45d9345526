// Credentials as client-go finds them: the in-cluster service account, or a kubeconfig's current context.

#include <fcntl.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <yaml-cpp/binary.h>
#include <yaml-cpp/yaml.h>

#include "kube/client.hpp"
#include "kube/kubeconfig.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::kube {
namespace {

// What a kubeconfig may say that gpuctk refuses by name, rather than ignore: each would change who the
// client is or whom it trusts in a way this client does not implement.
struct Refused {
  std::string_view key;
  std::string_view why;
};
constexpr Refused k_refused_user_keys[] = {
    // client-go runs a program for the credential: a daemon must not run what a file names.
    {"exec", "exec credential plugins are not supported (give a token, tokenFile or client certificate)"},
    // Cloud providers' plugins (gcp, azure, oidc): removed from client-go itself.
    {"auth-provider",
     "auth-provider plugins are not supported (give a token, tokenFile or client certificate)"},
    {"username", "basic authentication is not supported"},
    {"password", "basic authentication is not supported"},
    {"as", "impersonation is not supported"},
};
constexpr Refused k_refused_cluster_keys[] = {
    {"proxy-url", "proxies are not supported"},
    {"tls-server-name", "tls-server-name is not supported"},
};

// A scalar member of a mapping, "" when absent or null.
Result<std::string> scalar(const YAML::Node& map, const char* key, std::string_view where) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) {
    return std::string();
  }
  if (!node.IsScalar()) {
    return fail(std::string(where) + ": " + key + " is not a string");
  }
  return node.Scalar();
}

// The mapping under `field` of the entry named `name` of the list `list` ("clusters", "users",
// "contexts"), as kubeconfig nests them: - name: x \n cluster: {...}.
Result<YAML::Node> named_entry(const YAML::Node& root, const char* list, const char* field,
                               const std::string& name, std::string_view what) {
  const YAML::Node entries = root[list];
  if (entries && entries.IsSequence()) {
    for (const YAML::Node& entry : entries) {
      if (entry.IsMap() && entry["name"] && entry["name"].IsScalar() && entry["name"].Scalar() == name) {
        const YAML::Node body = entry[field];
        if (body && !body.IsNull() && !body.IsMap()) {
          return fail(std::string(what) + " " + quote(name) + ": " + field + " is not a mapping");
        }
        return body && body.IsMap() ? body : YAML::Node(YAML::NodeType::Map);
      }
    }
  }
  return fail(std::string(what) + " " + quote(name) + " not found");
}

Result<void> refuse(const YAML::Node& map, std::span<const Refused> table, const std::string& where) {
  for (const Refused& row : table) {
    if (map[std::string(row.key)]) {
      return fail(where + ": " + std::string(row.why));
    }
  }
  return {};
}

// `name` relative to the kubeconfig's folder, as client-go resolves it.
std::string resolve(const std::string& name, std::string_view dir) {
  if (name.empty() || name.front() == '/' || dir.empty()) {
    return name;
  }
  std::string out(dir);
  if (out.back() != '/') {
    out += '/';
  }
  return out + name;
}

// A -data field's PEM text (base64 in the file). Errors: "not base64", "not PEM".
Result<std::string> pem_data(const std::string& base64, std::string_view where, std::string_view field) {
  const std::vector<unsigned char> bytes = YAML::DecodeBase64(base64);
  if (bytes.empty()) {
    return fail(std::string(where) + ": " + std::string(field) + " is not base64");
  }
  std::string text(bytes.begin(), bytes.end());
  if (text.find("-----BEGIN ") == std::string::npos) {
    return fail(std::string(where) + ": " + std::string(field) + " is not PEM");
  }
  return text;
}

Result<void> read_cluster(const YAML::Node& cluster, const std::string& where, std::string_view dir,
                          Credentials& out) {
  GPUCTK_TRY(refuse(cluster, k_refused_cluster_keys, where));
  GPUCTK_TRY_ASSIGN(const std::string insecure, scalar(cluster, "insecure-skip-tls-verify", where));
  if (!insecure.empty() && insecure != "false") {
    return fail(where + ": insecure-skip-tls-verify is refused: TLS verification is always on");
  }
  GPUCTK_TRY_ASSIGN(out.server, scalar(cluster, "server", where));
  if (out.server.empty()) {
    return fail(where + ": no server");
  }
  GPUCTK_TRY_ASSIGN(const std::string ca_file, scalar(cluster, "certificate-authority", where));
  GPUCTK_TRY_ASSIGN(const std::string ca_data, scalar(cluster, "certificate-authority-data", where));
  if (!ca_data.empty()) {  // client-go: the data wins over the file
    GPUCTK_TRY_ASSIGN(out.ca_pem, pem_data(ca_data, where, "certificate-authority-data"));
  } else {
    out.ca_file = resolve(ca_file, dir);
  }
  return {};
}

// One of a user's client certificate or key: the -data form (PEM text) or the file.
Result<void> read_client_pem(const YAML::Node& user, const std::string& where, std::string_view dir,
                             const char* key, std::string& file, std::string& pem) {
  GPUCTK_TRY_ASSIGN(const std::string name, scalar(user, key, where));
  const std::string data_key = std::string(key) + "-data";
  GPUCTK_TRY_ASSIGN(const std::string data, scalar(user, data_key.c_str(), where));
  if (!data.empty()) {
    GPUCTK_TRY_ASSIGN(pem, pem_data(data, where, data_key));
  } else {
    file = resolve(name, dir);
  }
  return {};
}

Result<void> read_user(const YAML::Node& user, const std::string& where, std::string_view dir,
                       Credentials& out) {
  GPUCTK_TRY(refuse(user, k_refused_user_keys, where));
  GPUCTK_TRY_ASSIGN(out.token, scalar(user, "token", where));
  GPUCTK_TRY_ASSIGN(const std::string token_file, scalar(user, "tokenFile", where));
  out.token_file = resolve(token_file, dir);
  GPUCTK_TRY(
      read_client_pem(user, where, dir, "client-certificate", out.client_cert_file, out.client_cert_pem));
  GPUCTK_TRY(read_client_pem(user, where, dir, "client-key", out.client_key_file, out.client_key_pem));
  const bool has_cert = !out.client_cert_file.empty() || !out.client_cert_pem.empty();
  const bool has_key = !out.client_key_file.empty() || !out.client_key_pem.empty();
  if (has_cert != has_key) {
    return fail(where + ": a client certificate needs its key, and a key its certificate");
  }
  return {};
}

Result<Credentials> parse(std::string_view text, std::string_view dir) {
  const YAML::Node root = YAML::Load(std::string(text));
  if (!root.IsMap()) {
    return fail("not a kubeconfig (a YAML mapping)");
  }
  GPUCTK_TRY_ASSIGN(const std::string context_name, scalar(root, "current-context", "kubeconfig"));
  if (context_name.empty()) {
    return fail("no current-context");
  }
  GPUCTK_TRY_ASSIGN(const YAML::Node context,
                    named_entry(root, "contexts", "context", context_name, "context"));
  const std::string context_where = "context " + quote(context_name);
  GPUCTK_TRY_ASSIGN(const std::string cluster_name, scalar(context, "cluster", context_where));
  GPUCTK_TRY_ASSIGN(const std::string user_name, scalar(context, "user", context_where));
  Credentials out;
  GPUCTK_TRY_ASSIGN(out.namespace_name, scalar(context, "namespace", context_where));
  GPUCTK_TRY_ASSIGN(const YAML::Node cluster,
                    named_entry(root, "clusters", "cluster", cluster_name, "cluster"));
  GPUCTK_TRY(read_cluster(cluster, "cluster " + quote(cluster_name), dir, out));
  if (!user_name.empty()) {  // a context without a user: anonymous, as client-go allows
    GPUCTK_TRY_ASSIGN(const YAML::Node user, named_entry(root, "users", "user", user_name, "user"));
    GPUCTK_TRY(read_user(user, "user " + quote(user_name), dir, out));
  }
  return out;
}

// The regular file `path`, at most `max_size` bytes; FIFOs and devices refused.
Result<std::string> read_bounded(const std::string& path, size_t max_size) {
  GPUCTK_TRY_ASSIGN(auto text, read_regular_at(AT_FDCWD, path.c_str(), path, max_size));
  if (!text) {
    return fail_errno("read " + path, ENOENT);
  }
  return std::move(*text);
}

}  // namespace

Result<Credentials> parse_kubeconfig(std::string_view text, std::string_view dir) {
  // yaml-cpp reports errors by exception; they stop here.
  try {
    return parse(text, dir);
  } catch (const YAML::Exception& e) {
    return fail("YAML: " + e.msg);
  } catch (const std::exception& e) {
    return fail(std::string("YAML: ") + e.what());
  }
}

Result<std::string> in_cluster_server(std::string_view host, std::string_view port) {
  const auto host_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == ':';
  };
  if (host.empty() || !std::ranges::all_of(host, host_char)) {
    return fail("KUBERNETES_SERVICE_HOST " + quote(host) + " is not a host name or address");
  }
  const std::optional<uint64_t> number = parse_unsigned(port);
  if (!number || *number == 0 || *number > 65535) {
    return fail("KUBERNETES_SERVICE_PORT " + quote(port) + " is not a port");
  }
  const bool ipv6 = host.find(':') != std::string_view::npos;
  return "https://" + (ipv6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" +
         std::to_string(*number);
}

Result<std::string> check_token(std::string_view text) {
  const std::string_view token = trim(text);
  if (token.empty()) {
    return fail("empty");
  }
  if (!std::ranges::all_of(token, [](char c) { return c > ' ' && c < 0x7f; })) {
    return fail("holds a space or a control character");
  }
  return std::string(token);
}

Result<Credentials> in_cluster(const std::function<const char*(const char*)>& getenv, std::string_view dir) {
  const char* host = getenv("KUBERNETES_SERVICE_HOST");
  const char* port = getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || *host == '\0' || port == nullptr || *port == '\0') {
    return fail(
        "in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set (not in a pod: "
        "give a kubeconfig)");
  }
  Credentials out;
  out.origin = "in-cluster service account";
  auto server = in_cluster_server(host, port);
  if (!server) {
    return fail_with("in-cluster", server.error());
  }
  out.server = std::move(*server);
  const std::string folder(dir);
  out.token_file = folder + "/token";
  out.ca_file = folder + "/ca.crt";
  // Both are needed now (client-go fails as early); the token is read again at each use when it changed.
  for (const std::string& file : {out.token_file, out.ca_file}) {
    if (auto text = read_bounded(file, k_max_kubeconfig); !text) {
      return fail_with("in-cluster", text.error());
    }
  }
  if (auto name = read_regular_at(AT_FDCWD, (folder + "/namespace").c_str(), folder + "/namespace", 4096);
      name && *name) {
    out.namespace_name = std::string(trim(**name));
  }
  return out;
}

Result<Credentials> from_kubeconfig(const std::string& path) {
  GPUCTK_TRY_ASSIGN(const std::string text, read_bounded(path, k_max_kubeconfig));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash == 0 ? 1 : slash);
  auto credentials = parse_kubeconfig(text, dir);
  if (!credentials) {
    return fail_with("kubeconfig " + path, credentials.error());
  }
  credentials->origin = "kubeconfig " + path;
  return credentials;
}

Result<Credentials> load_credentials(const std::string& kubeconfig,
                                     const std::function<const char*(const char*)>& getenv) {
  return kubeconfig.empty() ? in_cluster(getenv) : from_kubeconfig(kubeconfig);
}

}  // namespace gpuctk::kube
