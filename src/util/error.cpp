#include "util/error.hpp"

#include <cstring>

namespace gpuctk {

std::unexpected<Error> fail_errno(std::string_view what, int err) {
  std::string message(what);
  message.append(": ").append(std::strerror(err));
  return fail(std::move(message));
}

}  // namespace gpuctk
