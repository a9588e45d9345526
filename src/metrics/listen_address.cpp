#include "metrics/listen_address.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <memory>

#include "util/strings.hpp"

namespace gpuctk::metrics {
namespace {

constexpr int k_backlog = 128;

Result<uint16_t> parse_port(std::string_view text, std::string_view whole) {
  unsigned value = 0;
  const auto* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || at != end || value > 65535) {
    return fail("address " + quote(whole) + ": port " + quote(text) + " is not a number from 0 to 65535");
  }
  return static_cast<uint16_t>(value);
}

// "[::1]", "" or "[", split off the address; the host is what is inside the brackets.
struct Split {
  std::string_view host;
  std::string_view port;
};

Result<Split> split(std::string_view text) {
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      return fail("address " + quote(text) + ": unclosed \"[\"");
    }
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return fail("address " + quote(text) + ": want host:port, [v6]:port or :port");
    }
    return Split{text.substr(1, close - 1), text.substr(close + 2)};
  }
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return fail("address " + quote(text) + ": want host:port, [v6]:port or :port");
  }
  const auto host = text.substr(0, colon);
  if (host.find(':') != std::string_view::npos) {
    return fail("address " + quote(text) + ": an IPv6 address needs brackets ([" + std::string(host) +
                "]:" + std::string(text.substr(colon + 1)) + ")");
  }
  return Split{host, text.substr(colon + 1)};
}

// "127.0.0.1:9400" or "[::1]:9400", from what the socket was bound to.
std::string shown(const sockaddr_storage& bound) {
  char text[INET6_ADDRSTRLEN] = {};
  if (bound.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(bound);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    return "[" + std::string(text) + "]:" + std::to_string(ntohs(v6.sin6_port));
  }
  const auto& v4 = reinterpret_cast<const sockaddr_in&>(bound);
  ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(v4.sin_port));
}

// One candidate address: a socket bound to it and listening, or the failing call.
Result<Listener> bind_one(const addrinfo& candidate, std::string_view what) {
  UniqueFd fd(::socket(candidate.ai_family, candidate.ai_socktype | SOCK_CLOEXEC, candidate.ai_protocol));
  if (!fd) {
    return fail_errno(std::string(what) + ": socket", errno);
  }
  const int on = 1;
  const int off = 0;
  // A restarted exporter binds again at once, past the old connections' TIME_WAIT.
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  if (candidate.ai_family == AF_INET6) {
    // Every address ("::") takes IPv4 as well, as Go's listener does, whatever the sysctl default.
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  }
  if (::bind(fd.get(), candidate.ai_addr, candidate.ai_addrlen) != 0) {
    return fail_errno(std::string(what) + ": bind", errno);
  }
  if (::listen(fd.get(), k_backlog) != 0) {
    return fail_errno(std::string(what) + ": listen", errno);
  }
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &size) != 0) {
    return fail_errno(std::string(what) + ": getsockname", errno);
  }
  return Listener{std::move(fd), shown(bound)};
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text) {
  GPUCTK_TRY_ASSIGN(const auto parts, split(text));
  GPUCTK_TRY_ASSIGN(const auto port, parse_port(parts.port, text));
  return ListenAddress{std::string(parts.host), port};
}

Result<Listener> listen_on(const ListenAddress& address) {
  const std::string what =
      "listen on " + (address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host) +
      ":" + std::to_string(address.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  // AI_PASSIVE with no host lists "::" before "0.0.0.0" where IPv6 is configured.
  const int rc =
      ::getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) {
    return fail(escape_for_log(what) + ": " + ::gai_strerror(rc));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  Result<Listener> last = fail(escape_for_log(what) + ": no address");
  for (const addrinfo* candidate = found; candidate != nullptr; candidate = candidate->ai_next) {
    last = bind_one(*candidate, escape_for_log(what));
    if (last) {
      return last;
    }
  }
  return last;
}

}  // namespace gpuctk::metrics
