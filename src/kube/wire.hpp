#pragma once
// What the API server's answers look like on the wire, apart from HTTP: its errors (a Status object:
// kind Status, apiVersion v1, status Failure, message, reason, code) and a watch's stream (one JSON object
// per line, {"type": "MODIFIED", "object": {...}}). Pure functions and a decoder, so that the unit tests
// reach every bound without a server.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"
#include "util/error.hpp"

namespace gpuctk::kube {

// The most bytes of an API message (or of an answer that is no Status) put into an ApiError.
inline constexpr size_t k_max_error_message = 1024;

// The reason phrase of an HTTP status ("Not Found"); "" for a status the table lacks.
std::string_view status_phrase(long status);

// The ApiError of an answer outside 2xx to `what` ("GET /api/v1/nodes/n1"): the Status's message when the
// body is one, else the body's first bytes, escaped and bounded:
//   GET /api/v1/nodes/n1: 404 Not Found: nodes "n1" not found
ApiError api_error(std::string_view what, long status, std::string_view body);

// The ApiError of a Status object (an ERROR watch event's): its code (500 when it has none), its message:
//   watch /api/v1/nodes?…: 410 Gone: too old resource version: 5 (7)
ApiError status_error(std::string_view what, const nlohmann::json& status);

// Splits a watch's bytes, as they arrive, into events. Each line is one event, at most `max_event` bytes;
// empty lines are skipped.
class WatchDecoder {
 public:
  explicit WatchDecoder(size_t max_event = k_max_event) : m_max_event(max_event) {}

  // Feeds `bytes`; calls `on_event` for each complete event, in order. Returns false once `on_event` did
  // (the rest is not decoded). Errors: "watch event larger than N bytes", "watch event is not JSON: …",
  // "watch event without a type and an object".
  Result<bool> feed(std::string_view bytes, const std::function<bool(const WatchEvent&)>& on_event);

  // Whether bytes of an unfinished event are held (a stream that ends here was cut).
  [[nodiscard]] bool pending() const { return !m_line.empty(); }

 private:
  Result<bool> decode_line(std::string_view line, const std::function<bool(const WatchEvent&)>& on_event);

  size_t m_max_event;
  std::string m_line;
};

}  // namespace gpuctk::kube
