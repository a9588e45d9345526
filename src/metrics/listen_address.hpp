#pragma once
// gpuctk-exporter's -a/--address, in dcgm-exporter's (Go's net.Listen) spelling, and the listening socket
// made from it. The socket is made here, not by the HTTP library, so that the exporter knows the port it
// got (port 0: any free port, which the tests use) and binds a dual-stack socket for ":9400" as Go does.

#include <cstdint>
#include <string>
#include <string_view>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace gpuctk::metrics {

struct ListenAddress {
  std::string host;   // "" for every address (":9400"); an IPv6 address without its brackets
  uint16_t port = 0;  // 0: any free port
  bool operator==(const ListenAddress&) const = default;
};

// Parses "host:port", "[v6]:port" or ":port". Errors, the address quoted:
//   address "9400": want host:port, [v6]:port or :port
//   address "[::1:9400": unclosed "["
//   address ":http": port "http" is not a number from 0 to 65535
//   address "::1:9400": an IPv6 address needs brackets ([::1]:9400)
Result<ListenAddress> parse_listen_address(std::string_view text);

// A bound, listening TCP socket and the address it got.
struct Listener {
  UniqueFd fd;
  std::string shown;  // "127.0.0.1:9400", "[::]:9400": the bound address and real port
};

// Binds and listens on `address` (a host name resolves to its first address that binds; "" is every
// address: IPv6 and IPv4 on one socket, IPv4 alone where IPv6 is off). Errors:
//   listen on 10.0.0.1:9400: bind: Cannot assign requested address
//   listen on nowhere.invalid:9400: Name or service not known
Result<Listener> listen_on(const ListenAddress& address);

}  // namespace gpuctk::metrics
