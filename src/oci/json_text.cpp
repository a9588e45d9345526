#include "oci/json_text.hpp"

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "util/strings.hpp"

namespace gpuctk::oci {

namespace {

using Json = nlohmann::ordered_json;

// nlohmann's parse_error::what() is "[json.exception.parse_error.101] parse error at line 1,
// column 2: syntax error while ...". The part after the position is what we keep.
std::string_view error_detail(std::string_view what) {
  const auto start = what.find("parse error");
  if (start == std::string_view::npos) {
    return what;
  }
  const auto colon = what.find(": ", start);
  return colon == std::string_view::npos ? what : what.substr(colon + 2);
}

// "<name>: <what> at line N, column M" for the byte at `offset` (0-based) of `text`.
std::string message_at(std::string_view name, std::string_view what, std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const auto last_newline = before.rfind('\n');
  const size_t column = last_newline == std::string_view::npos ? offset + 1 : offset - last_newline;
  std::string message(name);
  message.append(": ").append(what).append(" at line ").append(std::to_string(line));
  message.append(", column ").append(std::to_string(column));
  return message;
}

// The input of nlohmann's SAX parser: a char iterator whose position the handler can read. nlohmann
// does not tell a SAX handler where an event happened; with this, `*position` is the offset just past
// the token that caused the event (the '{' of start_object, the closing quote of key).
class TrackedChars {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  explicit TrackedChars(const char** position) : m_position(position) {}
  const char& operator*() const { return **m_position; }
  TrackedChars& operator++() {
    ++*m_position;
    return *this;
  }
  TrackedChars operator++(int) {
    TrackedChars before = *this;
    ++*m_position;
    return before;
  }
  bool operator==(const TrackedChars& other) const { return *m_position == *other.m_position; }

 private:
  const char** m_position;
};

// The offset of the opening quote of the string token that ends just before `end` (the offset past its
// closing quote). A quote inside the string is escaped, i.e. preceded by an odd number of backslashes.
size_t string_token_start(std::string_view text, size_t end) {
  if (end < 2) {
    return 0;
  }
  for (size_t i = end - 1; i-- > 0;) {
    if (text[i] != '"') {
      continue;
    }
    size_t backslashes = 0;
    while (backslashes < i && text[i - 1 - backslashes] == '\\') {
      ++backslashes;
    }
    if (backslashes % 2 == 0) {
      return i;
    }
  }
  return 0;
}

// Builds the ordered_json DOM from nlohmann's SAX events (as nlohmann's own json_sax_dom_parser does),
// refusing what parse_json refuses (see json_text.hpp). Returning false stops the parser; the error is
// then in error().
class CheckedDomBuilder {
 public:
  CheckedDomBuilder(std::string_view text, std::string_view name, const JsonShape* shape,
                    const char* const* position)
      : m_text(text), m_name(name), m_root_shape(shape), m_position(position) {
    m_stack.reserve(16);
  }

  Json& root() { return m_root; }
  [[nodiscard]] const std::optional<std::string>& error() const { return m_error; }

  // The SAX interface (nlohmann/detail/input/json_sax.hpp).
  bool null() { return put(nullptr); }
  bool boolean(bool value) { return put(value); }
  bool number_integer(Json::number_integer_t value) { return put(value); }
  bool number_unsigned(Json::number_unsigned_t value) { return put(value); }
  bool number_float(Json::number_float_t value, const Json::string_t& /*text*/) { return put(value); }
  bool string(Json::string_t& value) { return put(value); }
  bool binary(Json::binary_t& value) { return put(Json::binary(std::move(value))); }
  bool start_object(std::size_t /*elements*/) { return open(Json::value_t::object); }
  bool start_array(std::size_t /*elements*/) { return open(Json::value_t::array); }
  bool end_object() {
    m_stack.pop_back();
    return true;
  }
  bool end_array() {
    m_stack.pop_back();
    return true;
  }

  bool key(Json::string_t& key) {
    Frame& frame = m_stack.back();
    m_next_shape = nullptr;
    if (frame.shape != nullptr) {
      if (frame.shape->kind == JsonShape::Kind::map) {
        m_next_shape = frame.shape->element;
      } else {
        for (const JsonField& field : frame.shape->fields) {
          if (key == field.name) {
            m_next_shape = field.shape;
            break;
          }
          if (go_equal_fold(key, field.name)) {
            return fail_at_key("key " + quote(key) + " is read by runc as the OCI field \"" +
                               std::string(field.name) + "\" (Go ignores case in keys)");
          }
        }
      }
    }
    if (frame.has_key(key)) {
      return fail_at_key("duplicate key " + quote(key));
    }
    // ordered_map::emplace looks for the key by a linear scan, which made an object of n keys (100000
    // annotations) cost n^2 / 2 comparisons; the frame has already answered that, so append directly.
    auto& members = static_cast<Members&>(*frame.value->get_ptr<Json::object_t*>());
    members.emplace_back(key, nullptr);
    m_element = &members.back().second;
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/, const Json::exception& e) {
    if (e.id >= 100 && e.id < 200) {
      // `position` is the 1-based offset of the byte that failed (text.size() + 1 at end of input).
      m_error = message_at(m_name, error_detail(e.what()), m_text, position == 0 ? 0 : position - 1);
    } else {
      m_error = std::string(m_name) + ": " + e.what();
    }
    return false;
  }

 private:
  using Members = std::vector<std::pair<const std::string, Json>>;  // what ordered_map is made of

  struct Frame {
    Json* value;
    const JsonShape* shape;  // nullptr: keys other than duplicates are not checked
    // The keys seen, once the object has more than a few: a tree, not a hash set, because the keys are
    // the container's and an unseeded hash can be flooded with collisions.
    std::unique_ptr<std::set<std::string, std::less<>>> keys{};

    // Whether `key` is in this object already (and, if not, remember it).
    bool has_key(const std::string& key) {
      static constexpr size_t k_linear = 16;
      const auto& members = static_cast<const Members&>(*value->get_ptr<const Json::object_t*>());
      if (!keys) {
        if (members.size() < k_linear) {
          return std::ranges::any_of(members, [&](const auto& member) { return member.first == key; });
        }
        keys = std::make_unique<std::set<std::string, std::less<>>>();
        for (const auto& member : members) {
          keys->insert(member.first);
        }
      }
      return !keys->insert(key).second;
    }
  };

  [[nodiscard]] size_t offset() const { return static_cast<size_t>(*m_position - m_text.data()); }

  bool fail_at_key(const std::string& what) {
    m_error = message_at(m_name, what, m_text, string_token_start(m_text, offset()));
    return false;
  }

  // The slot the next value goes into and the shape it should have.
  Json* slot(const JsonShape*& shape) {
    if (m_stack.empty()) {
      shape = m_root_shape;
      return &m_root;
    }
    const Frame& top = m_stack.back();
    if (top.value->is_array()) {
      shape = top.shape != nullptr ? top.shape->element : nullptr;
      auto& array = *top.value->get_ptr<Json::array_t*>();
      array.emplace_back();
      return &array.back();
    }
    shape = m_next_shape;
    return m_element;
  }

  template <class Value>
  bool put(Value&& value) {
    const JsonShape* shape = nullptr;
    *slot(shape) = Json(std::forward<Value>(value));
    return true;
  }

  bool open(Json::value_t type) {
    if (m_stack.size() >= k_max_json_depth) {
      m_error = message_at(m_name, "nesting deeper than " + std::to_string(k_max_json_depth) + " levels",
                           m_text, offset() - 1);
      return false;
    }
    const JsonShape* shape = nullptr;
    Json* value = slot(shape);
    *value = Json(type);
    // A value of the wrong type (an array where Go has a struct) is not checked further: runc fails to
    // decode it anyway.
    const bool fits =
        shape != nullptr && (type == Json::value_t::array) == (shape->kind == JsonShape::Kind::array);
    m_stack.push_back(Frame{value, fits ? shape : nullptr});
    return true;
  }

  std::string_view m_text;
  std::string_view m_name;
  const JsonShape* m_root_shape;
  const char* const* m_position;
  Json m_root;
  std::vector<Frame> m_stack;
  Json* m_element = nullptr;                // the value of the last key, in the innermost object
  const JsonShape* m_next_shape = nullptr;  // the shape of that value
  std::optional<std::string> m_error;
};

}  // namespace

Result<nlohmann::ordered_json> parse_json(std::string_view text, std::string_view name,
                                          const JsonShape* shape) {
  const char* position = text.data();
  const char* end = text.data() + text.size();
  CheckedDomBuilder builder(text, name, shape, &position);
  try {
    const bool ok = Json::sax_parse(TrackedChars(&position), TrackedChars(&end), &builder);
    if (!ok) {
      return fail(builder.error().value_or(std::string(name) + ": not parsed"));
    }
  } catch (const Json::exception& e) {
    return fail(std::string(name) + ": " + e.what());
  }
  return std::move(builder.root());
}

bool go_equal_fold(std::string_view key, std::string_view field) {
  size_t k = 0;
  for (const char f : field) {
    if (k == key.size()) {
      return false;
    }
    const auto c = static_cast<unsigned char>(key[k]);
    const char lower_f = static_cast<char>(f >= 'A' && f <= 'Z' ? f + ('a' - 'A') : f);
    if (c < 0x80) {
      const char lower_c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
      if (lower_c != lower_f) {
        return false;
      }
      ++k;
    } else if (lower_f == 'k' && key.substr(k, 3) == "\xe2\x84\xaa") {  // U+212A KELVIN SIGN
      k += 3;
    } else if (lower_f == 's' && key.substr(k, 2) == "\xc5\xbf") {  // U+017F LATIN SMALL LETTER LONG S
      k += 2;
    } else {
      return false;
    }
  }
  return k == key.size();
}

std::string json_type_phrase(const nlohmann::ordered_json& value) {
  const std::string_view type = value.type_name();
  const bool vowel = !type.empty() && std::string_view("aeiou").find(type.front()) != std::string_view::npos;
  return std::string(vowel ? "an " : "a ").append(type);
}

}  // namespace gpuctk::oci
