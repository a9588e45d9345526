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

// A std::expected that must not be dropped: calling a function that can fail and ignoring its Result is
// a compile error in -Werror builds (the class is [[nodiscard]], so every function returning it is too).
template <class T = void>
class [[nodiscard]] Result : public std::expected<T, Error> {
 public:
  using std::expected<T, Error>::expected;
  Result() = default;
  // A plain std::expected (e.g. from .transform()) converts back.
  Result(std::expected<T, Error> other) : std::expected<T, Error>(std::move(other)) {}  // NOLINT
};

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

// Propagation, as ccache does it: the error of a failed Result goes up unchanged.
//   GPUCTK_TRY(write_file(...));                 // a Result<void> (or any Result whose value is unused)
//   GPUCTK_TRY_ASSIGN(auto text, read_file(p));  // declares `text` from the value of a Result<T>
// Both return from the enclosing function, whose return type must be a Result.
// NOLINTBEGIN(bugprone-macro-parentheses): `decl` is a declaration and `tmp` a name; neither can be
// parenthesised.
#define GPUCTK_TRY(expr)                                             \
  do {                                                               \
    auto&& gpuctk_try_result_ = (expr);                              \
    if (!gpuctk_try_result_) {                                       \
      return std::unexpected(std::move(gpuctk_try_result_).error()); \
    }                                                                \
  } while (false)

#define GPUCTK_TRY_CONCAT_INNER(a, b) a##b
#define GPUCTK_TRY_CONCAT(a, b) GPUCTK_TRY_CONCAT_INNER(a, b)
#define GPUCTK_TRY_ASSIGN(decl, expr) \
  GPUCTK_TRY_ASSIGN_IMPL(GPUCTK_TRY_CONCAT(gpuctk_try_, __LINE__), decl, expr)
#define GPUCTK_TRY_ASSIGN_IMPL(tmp, decl, expr)     \
  auto tmp = (expr);                                \
  if (!tmp) {                                       \
    return std::unexpected(std::move(tmp).error()); \
  }                                                 \
  decl = std::move(*tmp)
// NOLINTEND(bugprone-macro-parentheses)
