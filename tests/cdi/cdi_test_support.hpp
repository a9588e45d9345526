#pragma once
// What the tests of the CDI codec and of `gpuctk cdi validate` both feed the codec.

#include <string>

namespace gpuctk::test {

// A "billion laughs" YAML document: nine references per level over eight levels, which would expand to
// 9^8 values; the codec refuses it by its node limit, never expanding it.
inline std::string alias_bomb_yaml() {
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int j = 1; j < 9; ++j) {
      laughs += ", " + prev;
    }
    laughs += "]\n";
  }
  return laughs;
}

}  // namespace gpuctk::test
