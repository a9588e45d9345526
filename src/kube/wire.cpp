// The API server's errors and watch stream on the wire (wire.hpp).

#include "kube/wire.hpp"

#include <exception>
#include <string>

#include "util/strings.hpp"

namespace gpuctk::kube {
namespace {

// The statuses the API server answers with, and their reason phrases (RFC 9110).
struct Phrase {
  long status;
  std::string_view phrase;
};
constexpr Phrase k_phrases[] = {
    {400, "Bad Request"},             // a bad query parameter or body (unknown field, bad selector)
    {401, "Unauthorized"},            // no token, an unknown or expired one
    {403, "Forbidden"},               // RBAC said no
    {404, "Not Found"},               // no such object, or no such resource
    {405, "Method Not Allowed"},      // e.g. PUT on a collection
    {409, "Conflict"},                // a stale resourceVersion, or the object exists
    {410, "Gone"},                    // the resourceVersion is older than the compacted history
    {413, "Payload Too Large"},       // the request body
    {415, "Unsupported Media Type"},  // a PATCH's content type
    {422, "Unprocessable Entity"},    // the object is invalid
    {429, "Too Many Requests"},       // API priority and fairness
    {500, "Internal Server Error"},   // the server failed
    {503, "Service Unavailable"},     // the server is starting or stopping
    {504, "Gateway Timeout"},         // the server timed out (etcd)
};

ApiError make_error(std::string_view what, long status, std::string_view message) {
  std::string text(what);
  text += ": " + std::to_string(status);
  if (const std::string_view phrase = status_phrase(status); !phrase.empty()) {
    text += ' ';
    text += phrase;
  }
  if (!message.empty()) {
    text += ": " + escape_for_log(message, k_max_error_message);
  }
  return ApiError{status, std::move(text)};
}

}  // namespace

std::string_view status_phrase(long status) {
  for (const Phrase& row : k_phrases) {
    if (row.status == status) {
      return row.phrase;
    }
  }
  return {};
}

ApiError api_error(std::string_view what, long status, std::string_view body) {
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.value("kind", "") == "Status" && parsed.contains("message") &&
      parsed["message"].is_string()) {
    return make_error(what, status, parsed["message"].get<std::string>());
  }
  return make_error(what, status, trim(body));
}

ApiError status_error(std::string_view what, const nlohmann::json& status) {
  long code = 500;
  std::string message;
  if (status.is_object()) {
    if (const auto it = status.find("code"); it != status.end() && it->is_number_integer()) {
      code = it->get<long>();
    }
    if (const auto it = status.find("message"); it != status.end() && it->is_string()) {
      message = it->get<std::string>();
    }
  }
  return make_error(what, code, message);
}

Result<bool> WatchDecoder::feed(std::string_view bytes,
                                const std::function<bool(const WatchEvent&)>& on_event) {
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, newline);
    if (m_line.size() + piece.size() > m_max_event) {
      return fail("watch event larger than " + std::to_string(m_max_event) + " bytes");
    }
    if (newline == std::string_view::npos) {
      m_line.append(piece);
      return true;
    }
    bytes.remove_prefix(newline + 1);
    Result<bool> more;
    if (m_line.empty()) {  // the whole line is in `bytes`: no copy
      more = decode_line(piece, on_event);
    } else {
      m_line.append(piece);
      std::string line = std::move(m_line);
      m_line.clear();
      more = decode_line(line, on_event);
    }
    if (!more || !*more) {
      return more;
    }
  }
  return true;
}

Result<bool> WatchDecoder::decode_line(std::string_view line,
                                       const std::function<bool(const WatchEvent&)>& on_event) {
  if (trim(line).empty()) {
    return true;
  }
  nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
  if (parsed.is_discarded()) {
    return fail("watch event is not JSON: " + escape_for_log(line, 120));
  }
  if (!parsed.is_object() || !parsed.contains("type") || !parsed["type"].is_string() ||
      !parsed.contains("object") || !parsed["object"].is_object()) {
    return fail("watch event without a type and an object: " + escape_for_log(line, 120));
  }
  WatchEvent event{parsed["type"].get<std::string>(), std::move(parsed["object"])};
  return on_event(event);
}

}  // namespace gpuctk::kube
