#include "metrics/web_config.hpp"

#include <fcntl.h>

#include <algorithm>
#include <span>

#include <yaml-cpp/yaml.h>

#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::metrics {

namespace {

// The web config file and each PEM file it names: a certificate chain or a CA bundle is a few KiB.
constexpr size_t k_max_file_size = size_t{1} << 20;

// A key of exporter-toolkit's format and what gpuctk-exporter does with it.
struct KeyRow {
  std::string_view name;
  std::string_view refused;  // "": read; otherwise why gpuctk-exporter does not do it
};

constexpr KeyRow k_top_keys[] = {
    {"tls_server_config", ""},
    {"http_server_config", ""},
    {"basic_auth_users", ""},
    {"rate_limit", "gpuctk-exporter has no rate limiter"},
};

constexpr KeyRow k_tls_keys[] = {
    {"cert_file", ""},
    {"key_file", ""},
    {"client_ca_file", ""},
    {"client_auth_type", ""},
    {"min_version", ""},
    {"max_version", ""},
    {"cert", "no inline certificate: use cert_file"},
    {"key", "no inline key: use key_file"},
    {"client_ca", "no inline client CAs: use client_ca_file"},
    {"cipher_suites", "GnuTLS's NORMAL priorities choose the cipher suites"},
    {"curve_preferences", "GnuTLS's NORMAL priorities choose the curves"},
    {"prefer_server_cipher_suites", "GnuTLS's NORMAL priorities choose the order"},
    {"client_allowed_sans", "client certificates are checked against client_ca_file only"},
};

constexpr KeyRow k_http_keys[] = {
    {"headers", ""}, {"http2", ""},  // false only (checked with its value): gpuctk-exporter speaks HTTP/1.1
};

// client_auth_type, as the toolkit spells Go's tls.ClientAuthType.
struct ClientAuthRow {
  std::string_view name;
  bool supported;
  bool require;  // require_client_cert
};
constexpr ClientAuthRow k_client_auth[] = {
    {"", true, false},                           // not given: the toolkit's default
    {"NoClientCert", true, false},               // no client certificate asked for
    {"RequireAndVerifyClientCert", true, true},  // a certificate signed by client_ca_file, required
    {"RequestClientCert", false, false},         // asked for, never checked: insecure
    {"RequireAnyClientCert", false, false},      // required, never checked: insecure
    {"RequireClientCert", false, false},         // the toolkit's old name of RequireAnyClientCert
    {"VerifyClientCertIfGiven", false, false},   // optional: a client without one gets in
};
constexpr std::string_view k_client_auth_supported = "NoClientCert or RequireAndVerifyClientCert";

// min_version and max_version, oldest first, and GnuTLS's name of each.
struct TlsVersionRow {
  std::string_view name;
  std::string_view gnutls;
};
constexpr TlsVersionRow k_tls_versions[] = {
    {"TLS10", "VERS-TLS1.0"},
    {"TLS11", "VERS-TLS1.1"},
    {"TLS12", "VERS-TLS1.2"},  // the toolkit's default min_version
    {"TLS13", "VERS-TLS1.3"},  // the toolkit's default max_version
};
constexpr size_t k_default_min_version = 2;
constexpr size_t k_default_max_version = 3;

// The response headers the toolkit lets a file set (its extraHTTPHeaders), and the values it allows for
// the ones that are enumerations ('|' between them; "": any value).
struct HeaderRow {
  std::string_view name;
  std::string_view values;
};
constexpr HeaderRow k_headers[] = {
    {"Content-Security-Policy", ""},
    {"Strict-Transport-Security", ""},
    {"X-Content-Type-Options", "nosniff"},
    {"X-Frame-Options", "deny|sameorigin"},
    {"X-XSS-Protection", ""},
};
constexpr std::string_view k_headers_allowed =
    "Content-Security-Policy, Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options or "
    "X-XSS-Protection";

// Where messages point: the file, as given, and the line of a node in it.
struct Origin {
  const std::string& path;

  [[nodiscard]] std::unexpected<Error> fail_at(const YAML::Mark& mark, std::string_view where,
                                               std::string_view message) const {
    std::string text = path;
    if (!mark.is_null()) {
      text += ":" + std::to_string(mark.line + 1);
    }
    text += ": ";
    if (!where.empty()) {
      text.append(where).append(": ");
    }
    return fail(text.append(message));
  }
};

// A key as it appears in a message: as written when it is a plain name, quoted and escaped otherwise.
std::string key_text(std::string_view key) {
  const bool plain = !key.empty() && std::ranges::all_of(key, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
  return plain ? std::string(key) : quote(key);
}

std::string child(std::string_view where, std::string_view key) {
  return where.empty() ? key_text(key) : std::string(where) + "." + key_text(key);
}

// One member of a mapping: its key's text and both nodes (the key's for the line).
struct Member {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

// The members of the mapping `node` (named `where`), in file order; keys are strings, each at most once.
// A null node (the key with nothing after it) is an empty mapping, as the toolkit reads it.
Result<std::vector<Member>> members(const Origin& origin, const YAML::Node& node, std::string_view where) {
  std::vector<Member> out;
  if (node.IsNull()) {
    return out;
  }
  if (!node.IsMap()) {
    return origin.fail_at(node.Mark(), where, "expected a mapping");
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) {
      return origin.fail_at(it->first.Mark(), where, "a key must be a string");
    }
    const std::string& key = it->first.Scalar();
    if (std::ranges::any_of(out, [&](const Member& m) { return m.key == key; })) {
      return origin.fail_at(it->first.Mark(), child(where, key), "given twice");
    }
    out.push_back({key, it->first, it->second});
  }
  return out;
}

// members(), each key checked against `keys`: unknown keys and the ones gpuctk-exporter does not do are
// errors naming them.
Result<std::vector<Member>> known_members(const Origin& origin, const YAML::Node& node,
                                          std::string_view where, std::span<const KeyRow> keys) {
  GPUCTK_TRY_ASSIGN(auto list, members(origin, node, where));
  for (const Member& member : list) {
    const auto row = std::ranges::find(keys, std::string_view(member.key), &KeyRow::name);
    if (row == keys.end()) {
      return origin.fail_at(member.key_node.Mark(), child(where, member.key), "unknown key");
    }
    if (!row->refused.empty()) {
      return origin.fail_at(member.key_node.Mark(), child(where, member.key),
                            "not supported by gpuctk-exporter (" + std::string(row->refused) + ")");
    }
  }
  return list;
}

// Where a member's value is: a null one ("key:" with nothing) has the position after it, often the next
// line, so its key's line is given instead.
YAML::Mark value_mark(const Member& member) {
  return member.value.IsNull() ? member.key_node.Mark() : member.value.Mark();
}

// A string value; a null one ("key:" with nothing) is "", as the toolkit reads it.
Result<std::string> string_value(const Origin& origin, const Member& member, std::string_view where) {
  if (member.value.IsNull()) {
    return std::string();
  }
  if (!member.value.IsScalar()) {
    return origin.fail_at(value_mark(member), where, "expected a string");
  }
  return member.value.Scalar();
}

// A file named by tls_server_config, and where.
struct FileRef {
  std::string path;  // "" when not given
  YAML::Mark mark;
};

// tls_server_config, read but for its files.
struct TlsRefs {
  FileRef cert, key, client_ca;
  bool require_client_cert = false;
  size_t min_version = k_default_min_version;
  size_t max_version = k_default_max_version;
};

Result<size_t> tls_version(const Origin& origin, const Member& member, std::string_view where) {
  GPUCTK_TRY_ASSIGN(const std::string name, string_value(origin, member, where));
  const auto* row = std::ranges::find(k_tls_versions, std::string_view(name), &TlsVersionRow::name);
  if (row == std::end(k_tls_versions)) {
    return origin.fail_at(value_mark(member), where,
                          "unknown TLS version " + quote(name) + " (TLS10, TLS11, TLS12 or TLS13)");
  }
  return static_cast<size_t>(row - std::begin(k_tls_versions));
}

Result<bool> client_auth(const Origin& origin, const Member& member, std::string_view where) {
  GPUCTK_TRY_ASSIGN(const std::string name, string_value(origin, member, where));
  const auto* row = std::ranges::find(k_client_auth, std::string_view(name), &ClientAuthRow::name);
  if (row == std::end(k_client_auth)) {
    return origin.fail_at(
        value_mark(member), where,
        "unknown client_auth_type " + quote(name) + " (" + std::string(k_client_auth_supported) + ")");
  }
  if (!row->supported) {
    return origin.fail_at(value_mark(member), where,
                          quote(name) + " is not supported (" + std::string(k_client_auth_supported) + ")");
  }
  return row->require;
}

Result<void> read_tls_member(const Origin& origin, const Member& member, TlsRefs& tls) {
  const std::string where = child("tls_server_config", member.key);
  if (member.key == "min_version" || member.key == "max_version") {
    GPUCTK_TRY_ASSIGN(const size_t version, tls_version(origin, member, where));
    (member.key == "min_version" ? tls.min_version : tls.max_version) = version;
  } else if (member.key == "client_auth_type") {
    GPUCTK_TRY_ASSIGN(tls.require_client_cert, client_auth(origin, member, where));
  } else {
    FileRef& file = member.key == "cert_file" ? tls.cert : member.key == "key_file" ? tls.key : tls.client_ca;
    GPUCTK_TRY_ASSIGN(file.path, string_value(origin, member, where));
    file.mark = value_mark(member);
  }
  return {};
}

// What the toolkit refuses of a whole tls_server_config (ConfigToTLSConfig), and what gpuctk-exporter
// cannot do: RequireAndVerifyClientCert without client_ca_file would verify against nothing.
Result<void> check_tls(const Origin& origin, const TlsRefs& tls, const YAML::Mark& at) {
  constexpr std::string_view k_where = "tls_server_config";
  if (tls.cert.path.empty() && tls.key.path.empty()) {
    return origin.fail_at(at, k_where,
                          "cert_file and key_file are required (leave tls_server_config out for plain HTTP)");
  }
  if (tls.cert.path.empty() || tls.key.path.empty()) {
    return origin.fail_at(
        at, k_where, tls.cert.path.empty() ? "key_file without cert_file" : "cert_file without key_file");
  }
  if (!tls.client_ca.path.empty() && !tls.require_client_cert) {
    return origin.fail_at(tls.client_ca.mark, "tls_server_config.client_ca_file",
                          "needs client_auth_type RequireAndVerifyClientCert");
  }
  if (tls.require_client_cert && tls.client_ca.path.empty()) {
    return origin.fail_at(at, k_where, "client_auth_type RequireAndVerifyClientCert needs client_ca_file");
  }
  if (tls.min_version > tls.max_version) {
    return origin.fail_at(at, k_where,
                          "min_version " + std::string(k_tls_versions[tls.min_version].name) +
                              " is above max_version " + std::string(k_tls_versions[tls.max_version].name));
  }
  return {};
}

// tls_server_config; nullopt when it is absent or empty (plain HTTP).
Result<std::optional<TlsRefs>> read_tls(const Origin& origin, const Member& section) {
  GPUCTK_TRY_ASSIGN(const auto list, known_members(origin, section.value, "tls_server_config", k_tls_keys));
  if (list.empty()) {
    return std::optional<TlsRefs>();
  }
  TlsRefs tls;
  for (const Member& member : list) {
    GPUCTK_TRY(read_tls_member(origin, member, tls));
  }
  GPUCTK_TRY(check_tls(origin, tls, section.key_node.Mark()));
  return std::optional<TlsRefs>(std::move(tls));
}

// "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2": GnuTLS's defaults for everything but the versions.
std::string gnutls_priorities(const TlsRefs& tls) {
  std::string out = "NORMAL:-VERS-ALL";
  for (size_t v = tls.max_version + 1; v-- > tls.min_version;) {
    out.append(":+").append(k_tls_versions[v].gnutls);
  }
  return out;
}

Result<void> read_header(const Origin& origin, const Member& member, WebConfig& config) {
  const std::string where = child("http_server_config.headers", member.key);
  const auto* row = std::ranges::find(k_headers, std::string_view(member.key), &HeaderRow::name);
  if (row == std::end(k_headers)) {
    return origin.fail_at(member.key_node.Mark(), where,
                          "cannot be configured (" + std::string(k_headers_allowed) + ")");
  }
  GPUCTK_TRY_ASSIGN(std::string value, string_value(origin, member, where));
  const auto allowed = split(row->values, '|');
  if (!row->values.empty() && std::ranges::find(allowed, std::string_view(value)) == allowed.end()) {
    return origin.fail_at(value_mark(member), where,
                          quote(value) + " is not allowed (" + join(allowed, " or ") + ")");
  }
  if (std::ranges::any_of(value, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return origin.fail_at(value_mark(member), where, quote(value) + ": control characters in a header value");
  }
  if (!value.empty()) {  // "Unset if blank", as the toolkit's documentation says
    config.headers.emplace_back(member.key, std::move(value));
  }
  return {};
}

Result<void> read_http(const Origin& origin, const Member& section, WebConfig& config) {
  GPUCTK_TRY_ASSIGN(const auto list, known_members(origin, section.value, "http_server_config", k_http_keys));
  for (const Member& member : list) {
    const std::string where = child("http_server_config", member.key);
    if (member.key == "http2") {
      bool http2 = false;
      if (!member.value.IsScalar() || !YAML::convert<bool>::decode(member.value, http2)) {
        return origin.fail_at(value_mark(member), where, "expected true or false");
      }
      if (http2) {
        return origin.fail_at(
            value_mark(member), where,
            "true is not supported: gpuctk-exporter serves HTTP/1.1 (false, or leave it out)");
      }
      continue;
    }
    GPUCTK_TRY_ASSIGN(const auto headers, members(origin, member.value, where));
    for (const Member& header : headers) {
      GPUCTK_TRY(read_header(origin, header, config));
    }
  }
  return {};
}

Result<void> read_users(const Origin& origin, const Member& section, WebConfig& config) {
  GPUCTK_TRY_ASSIGN(const auto list, members(origin, section.value, "basic_auth_users"));
  for (const Member& member : list) {
    const std::string where = child("basic_auth_users", member.key);
    if (member.key.find(':') != std::string::npos) {
      return origin.fail_at(
          member.key_node.Mark(), where,
          "a user name with ':' can never log in (basic authentication ends it at the first ':')");
    }
    GPUCTK_TRY_ASSIGN(std::string hash, string_value(origin, member, where));
    if (!is_bcrypt_hash(hash)) {
      // The value is not echoed: it may be a password written where its hash belongs.
      return origin.fail_at(value_mark(member), where,
                            "not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04 to 31, 60 characters: "
                            "htpasswd -nBC 10 \"\" | tr -d ':\\n' writes one)");
    }
    config.basic_auth_users.emplace(member.key, std::move(hash));
  }
  return {};
}

// The file, parsed: everything but the PEM files' contents.
struct Parsed {
  WebConfig config;
  std::optional<TlsRefs> tls;
};

Result<Parsed> parse(const Origin& origin, const std::string& text) {
  const std::vector<YAML::Node> documents = YAML::LoadAll(text);
  Parsed parsed;
  if (documents.empty()) {
    return parsed;  // an empty file, or comments only
  }
  if (documents.size() > 1) {
    return origin.fail_at(YAML::Mark::null_mark(), "", "more than one YAML document");
  }
  GPUCTK_TRY_ASSIGN(const auto list, known_members(origin, documents[0], "", k_top_keys));
  for (const Member& member : list) {
    if (member.key == "tls_server_config") {
      GPUCTK_TRY_ASSIGN(parsed.tls, read_tls(origin, member));
    } else if (member.key == "http_server_config") {
      GPUCTK_TRY(read_http(origin, member, parsed.config));
    } else {
      GPUCTK_TRY(read_users(origin, member, parsed.config));
    }
  }
  return parsed;
}

// yaml-cpp reports errors by exception; they stop here, with the line they carry.
Result<Parsed> parse_caught(const Origin& origin, const std::string& text) {
  try {
    return parse(origin, text);
  } catch (const YAML::Exception& e) {
    return origin.fail_at(e.mark, "", "YAML: " + e.msg);
  } catch (const std::exception& e) {
    return origin.fail_at(YAML::Mark::null_mark(), "", std::string("YAML: ") + e.what());
  }
}

// The regular file `path`, at most k_max_file_size bytes, links followed; FIFOs and devices refused.
Result<std::string> read_bounded(const std::string& path) {
  GPUCTK_TRY_ASSIGN(auto text, read_regular_at(AT_FDCWD, path.c_str(), path, k_max_file_size));
  if (!text) {
    return fail_errno("read " + path, ENOENT);
  }
  return std::move(*text);
}

// A PEM file tls_server_config names, relative to the config file's folder (`folder`: "" or ending in
// '/'), holding `marker` (and `marker2`, when given).
Result<std::string> read_pem(const Origin& origin, const FileRef& file, std::string_view where,
                             std::string_view folder, std::string_view what, std::string_view marker,
                             std::string_view marker2 = {}) {
  const std::string path = file.path.starts_with('/') ? file.path : std::string(folder) + file.path;
  auto text = read_bounded(path);
  if (!text) {
    return origin.fail_at(file.mark, where, text.error().message);
  }
  if (text->find(marker) == std::string::npos || text->find(marker2) == std::string::npos) {
    return origin.fail_at(file.mark, where, path + ": no PEM " + std::string(what));
  }
  return std::move(*text);
}

Result<TlsSettings> read_tls_files(const Origin& origin, const TlsRefs& refs) {
  const std::string_view folder = std::string_view(origin.path).substr(0, origin.path.rfind('/') + 1);
  TlsSettings tls;
  GPUCTK_TRY_ASSIGN(tls.cert_pem,
                    read_pem(origin, refs.cert, "tls_server_config.cert_file", folder,
                             "certificate (-----BEGIN CERTIFICATE-----)", "-----BEGIN CERTIFICATE-----"));
  GPUCTK_TRY_ASSIGN(tls.key_pem, read_pem(origin, refs.key, "tls_server_config.key_file", folder,
                                          "private key (-----BEGIN … PRIVATE KEY-----)", "-----BEGIN ",
                                          "PRIVATE KEY-----"));
  if (!refs.client_ca.path.empty()) {
    GPUCTK_TRY_ASSIGN(tls.client_ca_pem,
                      read_pem(origin, refs.client_ca, "tls_server_config.client_ca_file", folder,
                               "certificate (-----BEGIN CERTIFICATE-----)", "-----BEGIN CERTIFICATE-----"));
  }
  tls.require_client_cert = refs.require_client_cert;
  tls.gnutls_priorities = gnutls_priorities(refs);
  return tls;
}

}  // namespace

Result<WebConfig> load_web_config(const std::string& path) {
  GPUCTK_TRY_ASSIGN(const std::string text, read_bounded(path));
  const Origin origin{path};
  GPUCTK_TRY_ASSIGN(Parsed parsed, parse_caught(origin, text));
  if (parsed.tls) {
    GPUCTK_TRY_ASSIGN(parsed.config.tls, read_tls_files(origin, *parsed.tls));
  }
  return std::move(parsed.config);
}

}  // namespace gpuctk::metrics
