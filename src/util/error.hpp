#pragma once
// The one error type of gpuctk. Functions that can fail return Result<T>; context is prefixed as the
// error travels up ("read /proc/driver/nvidia/version: Permission denied"). No exceptions cross
// layers: the CLI prints an Error once, as "gpuctk: error: <message>".

#include <expected>
#include <string>
#include <string_view>
#include <utility>

namespace gpuctk {

struct Error {
  std::string message;
};

template <class T = void>
using Result = std::expected<T, Error>;

// An error result from a message.
[[nodiscard]] inline std::unexpected<Error> fail(std::string message) {
  return std::unexpected(Error{std::move(message)});
}

// An error result "<what>: <strerror(err)>".
[[nodiscard]] std::unexpected<Error> fail_errno(std::string_view what, int err);

// `error` with "<context>: " in front.
[[nodiscard]] inline std::unexpected<Error> fail_with(std::string_view context, const Error& error) {
  std::string message;
  message.reserve(context.size() + 2 + error.message.size());
  message.append(context).append(": ").append(error.message);
  return fail(std::move(message));
}

}  // namespace gpuctk
