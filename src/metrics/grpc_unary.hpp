#pragma once
// One gRPC unary call over cleartext HTTP/2 (prior knowledge, h2c) on a unix socket, by nghttp2, without
// gRPC's runtime: what gpuctk-exporter needs to call the kubelet's pod-resources List (pod_resources.cpp)
// while keeping its resident set small (bench/README.md: gRPC's client alone held 7.4 MiB).
//
// Everything read from the socket is hostile: the answer's message is bounded (`max_message` bytes, from
// its length prefix, before any of it is kept), header blocks are bounded in count, fields and bytes, a
// compressed message (never asked for) and a second message are refused, and the whole call ends at the
// deadline whatever the peer does.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace gpuctk::metrics {

// At most this many header fields, and bytes of names and values (each field counted 32 bytes more, as
// HTTP/2's SETTINGS_MAX_HEADER_LIST_SIZE counts them), over all of an answer's header blocks.
inline constexpr std::size_t k_max_grpc_header_fields = 64;
inline constexpr std::size_t k_max_grpc_header_bytes = 16384;

struct GrpcUnaryCall {
  std::string socket_path;   // the unix socket (already checked to be one by the caller)
  std::string_view method;   // "/v1.PodResourcesLister/List"
  std::string_view request;  // the request message, serialized (without gRPC's 5-byte prefix)
  std::size_t max_message = 0;
  std::chrono::milliseconds timeout{0};
};

// Makes the call on a connection of its own and returns the answer's message (without its prefix).
// Errors are "<code name>: <message>", as gRPC's status codes are named, text from the peer escaped
// (escape_for_log) after grpc-message's percent-decoding:
//   "UNAVAILABLE: connect: <strerror>"                  nothing listening, …
//   "UNAVAILABLE: HTTP/2: <nghttp2's reason>"            the peer does not speak HTTP/2 properly
//   "UNAVAILABLE: the connection closed before the answer ended"
//   "DEADLINE_EXCEEDED: Deadline Exceeded"               `timeout` passed
//   "RESOURCE_EXHAUSTED: Received message larger than max (<length> vs. <max_message>)"
//   "RESOURCE_EXHAUSTED: more than <n> header fields" / "header fields over <n> bytes"
//   "INTERNAL: a compressed message, which was not asked for"
//   "INTERNAL: more than one message in a unary answer" / "the answer ended inside its message" /
//   "No message returned for unary request" / "the answer has no grpc-status"
//   "<code name>: <grpc-message>"                        the server's own status (grpc-status not 0)
//   "<code name>: HTTP status <n>"                       an answer that is not gRPC's (gRPC's mapping)
//   "<code name>: the stream was reset: <HTTP/2 error>"  RST_STREAM without a status
Result<std::string> grpc_unary(const GrpcUnaryCall& call);

// grpc-message's percent-encoding undone ("%0A" -> "\n"); a '%' not followed by two hex digits stays.
std::string percent_decode(std::string_view text);

}  // namespace gpuctk::metrics
