#pragma once
// The parsers behind kube::from_kubeconfig and kube::in_cluster (client.hpp), on text rather than paths,
// so that the unit tests reach every refusal without files.

#include <string>
#include <string_view>

#include "kube/client.hpp"
#include "util/error.hpp"

namespace gpuctk::kube {

// The largest kubeconfig read, and the largest token file: a token is a JWT of a few KiB.
inline constexpr size_t k_max_kubeconfig = 1024 * 1024;
inline constexpr size_t k_max_token = 64 * 1024;

// The credentials of the current context of the kubeconfig `text`. Relative file names in it are
// resolved against `dir` (the kubeconfig's folder, as client-go resolves them); files are not read here.
// Errors, without the file's name (from_kubeconfig adds it): "no current-context",
// "context \"a\" not found", "user \"u\": exec credential plugins are not supported (...)",
// "cluster \"c\": insecure-skip-tls-verify is refused: TLS verification is always on".
Result<Credentials> parse_kubeconfig(std::string_view text, std::string_view dir);

// The API server's URL from the two in-cluster variables: "https://10.96.0.1:443", an IPv6 host in
// brackets ("https://[fd00::1]:443"). Errors name the variable.
Result<std::string> in_cluster_server(std::string_view host, std::string_view port);

// A bearer token's text (a token file's content, trimmed): one line of printable ASCII without spaces,
// so that it cannot add a header line. Errors: "empty", "holds a space or a control character".
Result<std::string> check_token(std::string_view text);

}  // namespace gpuctk::kube
