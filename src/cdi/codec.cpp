#include "cdi/codec.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <span>
#include <spanstream>
#include <type_traits>

#include <nlohmann/json.hpp>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "cdi/doc_tree.hpp"
#include "cdi/yaml_scalars.hpp"
#include "util/strings.hpp"

namespace gpuctk::cdi {

namespace {

using Node = DocNode;
constexpr size_t k_max_depth = k_max_doc_depth;

// How big a spec may be. A host's spec is small (the DGX A100 fixture's: 4104 YAML nodes, 110 KB), so
// these limits only ever refuse a file written by mistake or to hurt us, and they refuse it early: before
// reading a huge file's bytes into a tree, or expanding YAML aliases ("billion laughs") at all.
// Nodes are keys, values and list items (a YAML alias counts as everything it repeats); one device of
// the usual shape takes about a dozen, so 1000000 nodes is some 80000 devices. read_canonical_yaml
// gives up at the same count (canonical_yaml.cpp) and leaves the refusal to read_yaml_document.
constexpr size_t k_max_nodes = k_max_doc_nodes;

constexpr std::string_view k_too_deep = "nesting deeper than 64 levels";

std::string too_many_nodes(std::string_view what) {
  return "spec too large: more than " + std::to_string(k_max_nodes) + " " + std::string(what) +
         " (keys, values and list items" + (what.starts_with("YAML") ? ", aliases expanded" : "") +
         "; a DGX A100's spec has about 4000)";
}

// yaml-cpp's parse events -> Node, as yaml-cpp's own YAML::Load + a tree walk would give it, but counted
// as it grows: a quoted scalar (tag "!") or an explicit !!str is a string, other scalars are plain and
// get YAML 1.1 meaning from the decoder; null words and empty values are null; mappings keep every
// member in order, repeated keys included. Past k_max_nodes or k_max_depth the parse stops (Refused).
class YamlTreeBuilder : public YAML::EventHandler {
 public:
  struct Refused {
    std::string message;
  };

  void OnDocumentStart(const YAML::Mark& /*mark*/) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& /*mark*/, YAML::anchor_t anchor) override { add_leaf(Node{}, anchor); }
  void OnScalar(const YAML::Mark& /*mark*/, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    const bool string = tag == "!" || tag == "tag:yaml.org,2002:str";
    add_leaf(Node{string ? Node::Kind::string : Node::Kind::plain, value, {}, {}}, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto it = m_anchors.find(anchor);
    if (it == m_anchors.end()) {
      // yaml-cpp knows the anchor, so its node is still open: the alias is inside what it names.
      throw Refused{"YAML alias at line " + std::to_string(mark.line + 1) + ", column " +
                    std::to_string(mark.column + 1) + " refers to a node that contains it"};
    }
    const Anchored& anchored = it->second;
    count(anchored.nodes);
    check_depth(m_open.size() + anchored.height);
    add(Node(anchored.node), anchored.height);
  }
  void OnSequenceStart(const YAML::Mark& /*mark*/, const std::string& /*tag*/, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value /*style*/) override {
    open(Node::Kind::list, anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& /*mark*/, const std::string& /*tag*/, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value /*style*/) override {
    open(Node::Kind::object, anchor);
  }
  void OnMapEnd() override { close(); }

  Node take_root() { return std::move(m_root); }

 private:
  // An open list or mapping.
  struct Frame {
    Node node;
    YAML::anchor_t anchor = YAML::NullAnchor;
    size_t nodes_before = 0;   // m_nodes before this node was counted: its size when it closes
    size_t height = 0;         // levels below it so far
    bool key_pending = false;  // a mapping whose last key waits for its value
  };
  // An anchored node, for the aliases that repeat it.
  struct Anchored {
    Node node;
    size_t nodes = 0;
    size_t height = 0;
  };

  void count(size_t nodes) {
    m_nodes += nodes;
    if (m_nodes > k_max_nodes) {
      throw Refused{too_many_nodes("YAML nodes")};
    }
  }
  static void check_depth(size_t depth) {
    if (depth > k_max_depth) {
      throw Refused{std::string(k_too_deep)};
    }
  }
  void add_leaf(Node node, YAML::anchor_t anchor) {
    check_depth(m_open.size());
    count(1);
    if (anchor != YAML::NullAnchor) {
      m_anchors[anchor] = Anchored{node, 1, 0};
    }
    add(std::move(node), 0);
  }
  void open(Node::Kind kind, YAML::anchor_t anchor) {
    check_depth(m_open.size());
    const size_t before = m_nodes;
    count(1);
    m_open.push_back(Frame{Node{kind, {}, {}, {}}, anchor, before, 0, false});
  }
  void close() {
    Frame done = std::move(m_open.back());
    m_open.pop_back();
    if (done.anchor != YAML::NullAnchor) {
      m_anchors[done.anchor] = Anchored{done.node, m_nodes - done.nodes_before, done.height};
    }
    add(std::move(done.node), done.height);
  }
  // Places a finished value into the innermost open container (a mapping takes key, value, key, ...),
  // or at the root.
  void add(Node value, size_t height) {
    if (m_open.empty()) {
      m_root = std::move(value);
      return;
    }
    Frame& parent = m_open.back();
    parent.height = std::max(parent.height, height + 1);
    if (parent.node.kind == Node::Kind::list) {
      parent.node.items.push_back(std::move(value));
    } else if (!parent.key_pending) {
      parent.node.members.emplace_back(std::move(value), Node{});
      parent.key_pending = true;
    } else {
      parent.node.members.back().second = std::move(value);
      parent.key_pending = false;
    }
  }

  std::vector<Frame> m_open;
  std::map<YAML::anchor_t, Anchored> m_anchors;
  size_t m_nodes = 0;
  Node m_root;
};

// nlohmann SAX events -> Node.
class JsonTreeBuilder {
 public:
  using Json = nlohmann::json;

  bool null() { return leaf(Node{}); }
  bool boolean(bool value) { return leaf(Node{Node::Kind::boolean, value ? "true" : "false", {}, {}}); }
  bool number_integer(Json::number_integer_t value) {
    return leaf(Node{Node::Kind::number, std::to_string(value), {}, {}});
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    return leaf(Node{Node::Kind::number, std::to_string(value), {}, {}});
  }
  bool number_float(Json::number_float_t /*value*/, const Json::string_t& text) {
    return leaf(Node{Node::Kind::number, text, {}, {}});
  }
  bool string(Json::string_t& value) { return leaf(Node{Node::Kind::string, std::move(value), {}, {}}); }
  bool binary(Json::binary_t& /*value*/) { return leaf(Node{}); }  // JSON text never has binary values
  bool start_object(std::size_t /*size*/) { return open(Node::Kind::object); }
  bool key(Json::string_t& key) {
    if (!count()) {
      return false;
    }
    m_open.back().members.emplace_back(Node{Node::Kind::string, std::move(key), {}, {}}, Node{});
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t /*size*/) { return open(Node::Kind::list); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) {
    // "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error ..." ->
    // "JSON syntax error at line 1, column 9: syntax error ..."
    std::string_view what = error.what();
    constexpr std::string_view k_marker = "parse error ";
    const auto marker = what.find(k_marker);
    m_error = marker == std::string_view::npos
                  ? "JSON syntax error: " + std::string(what)
                  : "JSON syntax error " + std::string(what.substr(marker + k_marker.size()));
    return false;
  }

  [[nodiscard]] const std::string& error() const { return m_error; }
  Node take_root() { return std::move(m_root); }

 private:
  // One more node; false (and the error) past k_max_nodes.
  bool count() {
    if (++m_nodes > k_max_nodes) {
      m_error = too_many_nodes("JSON values");
      return false;
    }
    return true;
  }
  bool leaf(Node value) { return count() && add(std::move(value)); }
  bool open(Node::Kind kind) {
    if (m_open.size() >= k_max_depth) {
      m_error = std::string(k_too_deep);
      return false;
    }
    if (!count()) {
      return false;
    }
    m_open.push_back(Node{kind, {}, {}, {}});
    return true;
  }
  bool close() {
    Node done = std::move(m_open.back());
    m_open.pop_back();
    return add(std::move(done));
  }
  // Places a finished value into the innermost open container (after its key), or at the root.
  bool add(Node value) {
    if (m_open.empty()) {
      m_root = std::move(value);
    } else if (m_open.back().kind == Node::Kind::object) {
      m_open.back().members.back().second = std::move(value);
    } else {
      m_open.back().items.push_back(std::move(value));
    }
    return true;
  }

  std::vector<Node> m_open;
  Node m_root;
  std::string m_error;
  size_t m_nodes = 0;
};

Result<Node> read_yaml(std::string_view text) {
  GPUCTK_TRY(check_yaml_text(text));
  if (auto canonical = read_canonical_yaml(text)) {
    return std::move(*canonical);
  }
  return read_yaml_document(text);
}

Result<Node> read_json(std::string_view text) {
  if (trim(text).empty()) {
    return Node{};
  }
  try {
    JsonTreeBuilder builder;
    if (!nlohmann::json::sax_parse(text.begin(), text.end(), &builder)) {
      return fail(builder.error().empty() ? std::string("JSON syntax error") : builder.error());
    }
    return builder.take_root();
  } catch (const std::exception& e) {
    return fail(std::string("JSON: ") + e.what());
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding Node -> model. Paths name the value: "devices[0].containerEdits.env[1]".

using Path = std::string;

Path child(const Path& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}
Path element(const Path& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}
std::string where(const Path& path) {
  return path.empty() ? "top level" : path;
}
std::string in(const Path& path) {
  return path.empty() ? "at top level" : "in " + path;
}

std::string describe(const Node& node) {
  switch (node.kind) {
    case Node::Kind::null:
      return "null";
    case Node::Kind::list:
      return "a list";
    case Node::Kind::object:
      return "an object";
    case Node::Kind::plain:
    case Node::Kind::number:
    case Node::Kind::boolean:
      return node.text;
    case Node::Kind::string:
      return quote(node.text);
  }
  return "?";
}

std::unexpected<Error> type_error(const Path& path, std::string_view want, const Node& got) {
  return fail(where(path) + ": expected " + std::string(want) + ", got " + describe(got));
}

// Every decode/encode/is_unset overload is declared before the field tables use them.
Result<void> decode(const Node& node, const Path& path, std::string& out);
Result<void> decode(const Node& node, const Path& path, int64_t& out);
Result<void> decode(const Node& node, const Path& path, uint32_t& out);
Result<void> decode(const Node& node, const Path& path, int& out);
Result<void> decode(const Node& node, const Path& path, bool& out);
Result<void> decode(const Node& node, const Path& path, std::map<std::string, std::string>& out);
template <class T>
Result<void> decode(const Node& node, const Path& path, std::optional<T>& out);
template <class T>
Result<void> decode(const Node& node, const Path& path, std::vector<T>& out);
Result<void> decode(const Node& node, const Path& path, DeviceNode& out);
Result<void> decode(const Node& node, const Path& path, Mount& out);
Result<void> decode(const Node& node, const Path& path, Hook& out);
Result<void> decode(const Node& node, const Path& path, IntelRdt& out);
Result<void> decode(const Node& node, const Path& path, NetDevice& out);
Result<void> decode(const Node& node, const Path& path, ContainerEdits& out);
Result<void> decode(const Node& node, const Path& path, Device& out);

using Json = nlohmann::ordered_json;

Json encode(const std::string& value) {
  return value;
}
Json encode(int64_t value) {
  return value;
}
Json encode(uint32_t value) {
  return value;
}
Json encode(int value) {
  return value;
}
Json encode(bool value) {
  return value;
}
Json encode(const std::map<std::string, std::string>& value);
template <class T>
Json encode(const std::optional<T>& value);
template <class T>
Json encode(const std::vector<T>& value);
Json encode(const DeviceNode& value);
Json encode(const Mount& value);
Json encode(const Hook& value);
Json encode(const IntelRdt& value);
Json encode(const NetDevice& value);
Json encode(const ContainerEdits& value);
Json encode(const Device& value);

// What counts as "not set" and is therefore never written.
bool is_unset(const std::string& value) {
  return value.empty();
}
bool is_unset(bool value) {
  return !value;
}
bool is_unset(const std::map<std::string, std::string>& value) {
  return value.empty();
}
bool is_unset(const ContainerEdits& value) {
  return value.empty();
}
template <class T>
bool is_unset(const std::optional<T>& value) {
  return !value.has_value();
}
template <class T>
bool is_unset(const std::vector<T>& value) {
  return value.empty();
}

// Direct YAML output (layout below): yaml_value writes what follows "key:" or "-" on a line; a
// structured value that is not empty continues on the next lines as a block two spaces deeper.
void yaml_value(const std::string& value, size_t indent, std::string& out);
void yaml_value(int64_t value, size_t indent, std::string& out);
void yaml_value(uint32_t value, size_t indent, std::string& out);
void yaml_value(int value, size_t indent, std::string& out);
void yaml_value(bool value, size_t indent, std::string& out);
void yaml_value(const std::map<std::string, std::string>& value, size_t indent, std::string& out);
template <class T>
void yaml_value(const std::optional<T>& value, size_t indent, std::string& out);
template <class T>
void yaml_value(const std::vector<T>& value, size_t indent, std::string& out);
void yaml_value(const DeviceNode& value, size_t indent, std::string& out);
void yaml_value(const Mount& value, size_t indent, std::string& out);
void yaml_value(const Hook& value, size_t indent, std::string& out);
void yaml_value(const IntelRdt& value, size_t indent, std::string& out);
void yaml_value(const NetDevice& value, size_t indent, std::string& out);
void yaml_value(const ContainerEdits& value, size_t indent, std::string& out);
void yaml_value(const Device& value, size_t indent, std::string& out);

// Scalars.

Result<void> decode(const Node& node, const Path& path, std::string& out) {
  if (node.kind == Node::Kind::plain) {
    if (const auto reading = plain_scalar_reading(node.text)) {
      return fail(where(path) + ": unquoted " + node.text + " is " + std::string(*reading) +
                  " to CDI runtimes (YAML 1.1), not a string; quote it");
    }
  } else if (node.kind != Node::Kind::string) {
    return type_error(path, "a string", node);
  }
  out = node.text;
  return {};
}

// An integer of type T from a JSON number (decimal only) or a YAML plain scalar (YAML 1.1 syntax).
template <class T>
Result<void> decode_integer(const Node& node, const Path& path, T& out) {
  std::optional<YamlInteger> integer;
  if (node.kind == Node::Kind::plain) {
    integer = parse_yaml_integer(node.text);
  } else if (node.kind == Node::Kind::number && node.text.find_first_of(".eE") == std::string::npos) {
    integer = parse_yaml_integer(node.text);  // nlohmann prints integers in plain decimal
  }
  if (!integer) {
    return type_error(path, "an integer", node);
  }
  using Limits = std::numeric_limits<T>;
  bool fits = false;
  if (!integer->negative) {
    fits = integer->magnitude <= static_cast<uint64_t>(Limits::max());
  } else if constexpr (std::is_signed_v<T>) {
    fits = integer->magnitude <= static_cast<uint64_t>(Limits::max()) + 1;  // two's complement minimum
  }
  if (!fits) {
    return fail(where(path) + ": " + node.text + " is out of range (" + std::to_string(Limits::min()) +
                " to " + std::to_string(Limits::max()) + ")");
  }
  // Negation modulo 2^64 gives the right value for every magnitude that fits, the minimum included.
  out = integer->negative ? static_cast<T>(0 - integer->magnitude) : static_cast<T>(integer->magnitude);
  return {};
}

Result<void> decode(const Node& node, const Path& path, int64_t& out) {
  return decode_integer(node, path, out);
}
Result<void> decode(const Node& node, const Path& path, uint32_t& out) {
  return decode_integer(node, path, out);
}
Result<void> decode(const Node& node, const Path& path, int& out) {
  return decode_integer(node, path, out);
}

Result<void> decode(const Node& node, const Path& path, bool& out) {
  std::optional<bool> value;
  if (node.kind == Node::Kind::boolean) {
    value = node.text == "true";
  } else if (node.kind == Node::Kind::plain) {
    value = parse_yaml_bool(node.text);
  }
  if (!value) {
    return type_error(path, "a boolean", node);
  }
  out = *value;
  return {};
}

// Containers.

// The longest map key, as gpuctk writes it in YAML (quoted, escaped): YAML's implicit-key limit, 1024.
constexpr size_t k_max_written_key = 1024;

Result<void> decode(const Node& node, const Path& path, std::map<std::string, std::string>& out) {
  if (node.kind != Node::Kind::object) {
    return type_error(path, "an object", node);
  }
  for (const auto& [key_node, value_node] : node.members) {
    std::string key;
    GPUCTK_TRY(decode(key_node, path, key));
    // gpuctk writes map keys as YAML implicit keys, which YAML limits to 1024 characters: a longer key
    // (as written: quoted and escaped) would be read here and written back unreadable by yaml-cpp.
    if (const size_t written = yaml_quote(key).size(); written > k_max_written_key) {
      return fail("key of " + std::to_string(written) + " characters as YAML " + in(path) + ": longer than " +
                  std::to_string(k_max_written_key));
    }
    const Path value_path = path + "[" + quote(key) + "]";
    std::string value;
    GPUCTK_TRY(decode(value_node, value_path, value));
    if (!out.emplace(key, std::move(value)).second) {
      return fail("duplicate key " + quote(key) + " " + in(path));
    }
  }
  return {};
}

template <class T>
Result<void> decode(const Node& node, const Path& path, std::optional<T>& out) {
  T value{};
  GPUCTK_TRY(decode(node, path, value));
  out = std::move(value);
  return {};
}

template <class T>
Result<void> decode(const Node& node, const Path& path, std::vector<T>& out) {
  if (node.kind != Node::Kind::list) {
    return type_error(path, "a list", node);
  }
  out.resize(node.items.size());
  for (size_t i = 0; i < node.items.size(); ++i) {
    GPUCTK_TRY(decode(node.items[i], element(path, i), out[i]));
  }
  return {};
}

Json encode(const std::map<std::string, std::string>& value) {
  Json object = Json::object();
  for (const auto& [key, item] : value) {
    object[key] = item;
  }
  return object;
}

template <class T>
Json encode(const std::optional<T>& value) {
  return encode(*value);
}

template <class T>
Json encode(const std::vector<T>& value) {
  Json array = Json::array();
  for (const auto& item : value) {
    array.push_back(encode(item));
  }
  return array;
}

// ---------------------------------------------------------------------------------------------
// Objects: one table per struct, in the reference's key order, drives decoding and encoding.

// Whether a field is written when unset: required keys are always written.
enum class Write { if_set, always };

template <class T>
struct Field {
  std::string_view key;
  Result<void> (*decode)(const Node& node, const Path& path, T& object);
  bool (*written)(const T& object);                                      // whether the key is written
  Json (*encode)(const T& object);                                       // its value, for JSON
  void (*write_yaml)(const T& object, size_t indent, std::string& out);  // its value, after "key:"
};

template <class>
struct MemberPointer;
template <class C, class M>
struct MemberPointer<M C::*> {
  using Class = C;
};

template <auto Member, Write write = Write::if_set>
constexpr auto field(std::string_view key) {
  using T = typename MemberPointer<decltype(Member)>::Class;
  return Field<T>{
      key, [](const Node& node, const Path& path, T& object) { return decode(node, path, object.*Member); },
      [](const T& object) { return write == Write::always || !is_unset(object.*Member); },
      [](const T& object) { return encode(object.*Member); },
      [](const T& object, size_t indent, std::string& out) { yaml_value(object.*Member, indent, out); }};
}

constexpr std::array k_device_node_fields{
    field<&DeviceNode::path>("path"),
    field<&DeviceNode::host_path>("hostPath"),
    field<&DeviceNode::type>("type"),
    field<&DeviceNode::major>("major"),
    field<&DeviceNode::minor>("minor"),
    field<&DeviceNode::file_mode>("fileMode"),
    field<&DeviceNode::permissions>("permissions"),
    field<&DeviceNode::uid>("uid"),
    field<&DeviceNode::gid>("gid"),
};

constexpr std::array k_mount_fields{
    field<&Mount::host_path>("hostPath"),
    field<&Mount::container_path>("containerPath"),
    field<&Mount::options>("options"),
    field<&Mount::type>("type"),
};

constexpr std::array k_hook_fields{
    field<&Hook::hook_name>("hookName"), field<&Hook::path>("path"),
    field<&Hook::args>("args"),          field<&Hook::env>("env"),
    field<&Hook::timeout>("timeout"),
};

constexpr std::array k_intel_rdt_fields{
    field<&IntelRdt::clos_id>("closID"),
    field<&IntelRdt::l3_cache_schema>("l3CacheSchema"),
    field<&IntelRdt::mem_bw_schema>("memBwSchema"),
    field<&IntelRdt::schemata>("schemata"),
    field<&IntelRdt::enable_monitoring>("enableMonitoring"),
    field<&IntelRdt::enable_cmt>("enableCMT"),
    field<&IntelRdt::enable_mbm>("enableMBM"),
};

constexpr std::array k_net_device_fields{
    field<&NetDevice::host_interface_name>("hostInterfaceName"),
    field<&NetDevice::name>("name"),
};

constexpr std::array k_container_edits_fields{
    field<&ContainerEdits::env>("env"),
    field<&ContainerEdits::device_nodes>("deviceNodes"),
    field<&ContainerEdits::mounts>("mounts"),
    field<&ContainerEdits::hooks>("hooks"),
    field<&ContainerEdits::intel_rdt>("intelRdt"),
    field<&ContainerEdits::additional_gids>("additionalGids"),
    field<&ContainerEdits::net_devices>("netDevices"),
};

constexpr std::array k_device_fields{
    field<&Device::name>("name"), field<&Device::annotations>("annotations"),
    field<&Device::container_edits, Write::always>("containerEdits"),  // required, even when empty
};

constexpr std::array k_spec_fields{
    field<&Spec::cdi_version>("cdiVersion"),
    field<&Spec::kind>("kind"),
    field<&Spec::annotations>("annotations"),
    field<&Spec::devices, Write::always>("devices"),  // required, even when empty
    field<&Spec::container_edits>("containerEdits"),  // omitted when empty
};

template <class T, size_t N>
Result<void> decode_object(const Node& node, const Path& path, const std::array<Field<T>, N>& fields,
                           T& out) {
  if (node.kind != Node::Kind::object) {
    return type_error(path, "an object", node);
  }
  std::array<bool, N> seen{};
  for (const auto& [key, value] : node.members) {
    if (key.kind != Node::Kind::string && key.kind != Node::Kind::plain) {
      return fail(where(path) + ": expected a string key, got " + describe(key));
    }
    const auto found = std::ranges::find(fields, std::string_view(key.text), &Field<T>::key);
    if (found == fields.end()) {
      return fail("unknown field " + quote(key.text) + " " + in(path));
    }
    const auto index = static_cast<size_t>(found - fields.begin());
    if (seen[index]) {
      return fail("duplicate field " + quote(key.text) + " " + in(path));
    }
    seen[index] = true;
    if (value.kind == Node::Kind::null) {
      continue;  // as in Go: null leaves the field unset
    }
    GPUCTK_TRY(found->decode(value, child(path, key.text), out));
  }
  return {};
}

template <class T, size_t N>
Json encode_object(const std::array<Field<T>, N>& fields, const T& object) {
  Json out = Json::object();
  for (const auto& f : fields) {
    if (f.written(object)) {
      out[std::string(f.key)] = f.encode(object);
    }
  }
  return out;
}

Result<void> decode(const Node& n, const Path& p, DeviceNode& out) {
  return decode_object(n, p, k_device_node_fields, out);
}
Result<void> decode(const Node& n, const Path& p, Mount& out) {
  return decode_object(n, p, k_mount_fields, out);
}
Result<void> decode(const Node& n, const Path& p, Hook& out) {
  return decode_object(n, p, k_hook_fields, out);
}
Result<void> decode(const Node& n, const Path& p, IntelRdt& out) {
  return decode_object(n, p, k_intel_rdt_fields, out);
}
Result<void> decode(const Node& n, const Path& p, NetDevice& out) {
  return decode_object(n, p, k_net_device_fields, out);
}
Result<void> decode(const Node& n, const Path& p, ContainerEdits& out) {
  return decode_object(n, p, k_container_edits_fields, out);
}
Result<void> decode(const Node& n, const Path& p, Device& out) {
  return decode_object(n, p, k_device_fields, out);
}

Json encode(const DeviceNode& value) {
  return encode_object(k_device_node_fields, value);
}
Json encode(const Mount& value) {
  return encode_object(k_mount_fields, value);
}
Json encode(const Hook& value) {
  return encode_object(k_hook_fields, value);
}
Json encode(const IntelRdt& value) {
  return encode_object(k_intel_rdt_fields, value);
}
Json encode(const NetDevice& value) {
  return encode_object(k_net_device_fields, value);
}
Json encode(const ContainerEdits& value) {
  return encode_object(k_container_edits_fields, value);
}
Json encode(const Device& value) {
  return encode_object(k_device_fields, value);
}

// ---------------------------------------------------------------------------------------------
// YAML output, written straight from the model: block style, two-space indent, "- " items; strings
// always double-quoted; keys plain when they read as the same string (our field names), else quoted;
// an empty list or object as [] or {}. read_canonical_yaml reads exactly this layout.

void append_yaml_key(std::string_view key, std::string& out) {
  const bool plain = !key.empty() && std::ranges::all_of(key, is_plain_key_char);
  if (plain && !plain_scalar_reading(key)) {
    out += key;
  } else {
    append_yaml_quoted(out, key);
  }
}

void yaml_scalar(std::string_view text, std::string& out) {
  out += ' ';
  out += text;
  out += '\n';
}

void yaml_value(const std::string& value, size_t /*indent*/, std::string& out) {
  out += ' ';
  append_yaml_quoted(out, value);
  out += '\n';
}
void yaml_value(int64_t value, size_t /*indent*/, std::string& out) {
  yaml_scalar(std::to_string(value), out);
}
void yaml_value(uint32_t value, size_t /*indent*/, std::string& out) {
  yaml_scalar(std::to_string(value), out);
}
void yaml_value(int value, size_t /*indent*/, std::string& out) {
  yaml_scalar(std::to_string(value), out);
}
void yaml_value(bool value, size_t /*indent*/, std::string& out) {
  yaml_scalar(value ? "true" : "false", out);
}

template <class T>
void yaml_value(const std::optional<T>& value, size_t indent, std::string& out) {
  yaml_value(*value, indent, out);
}

void yaml_value(const std::map<std::string, std::string>& value, size_t indent, std::string& out) {
  if (value.empty()) {
    yaml_scalar("{}", out);
    return;
  }
  out += '\n';
  for (const auto& [key, item] : value) {
    out.append(indent + 2, ' ');
    append_yaml_key(key, out);
    out += ':';
    yaml_value(item, indent + 2, out);
  }
}

// The members of `object` that are written, from column `indent`; `after_dash`: the first continues a
// "- " already written.
template <class T, size_t N>
void yaml_members(const std::array<Field<T>, N>& fields, const T& object, size_t indent, bool after_dash,
                  std::string& out) {
  bool first = true;
  for (const auto& f : fields) {
    if (!f.written(object)) {
      continue;
    }
    if (!(first && after_dash)) {
      out.append(indent, ' ');
    }
    first = false;
    append_yaml_key(f.key, out);
    out += ':';
    f.write_yaml(object, indent, out);
  }
}

template <class T, size_t N>
bool yaml_empty(const std::array<Field<T>, N>& fields, const T& object) {
  return std::ranges::none_of(fields, [&](const Field<T>& f) { return f.written(object); });
}

template <class T, size_t N>
void yaml_object(const std::array<Field<T>, N>& fields, const T& object, size_t indent, std::string& out) {
  if (yaml_empty(fields, object)) {
    yaml_scalar("{}", out);
    return;
  }
  out += '\n';
  yaml_members(fields, object, indent + 2, false, out);
}

void yaml_value(const DeviceNode& v, size_t indent, std::string& out) {
  yaml_object(k_device_node_fields, v, indent, out);
}
void yaml_value(const Mount& v, size_t indent, std::string& out) {
  yaml_object(k_mount_fields, v, indent, out);
}
void yaml_value(const Hook& v, size_t indent, std::string& out) {
  yaml_object(k_hook_fields, v, indent, out);
}
void yaml_value(const IntelRdt& v, size_t indent, std::string& out) {
  yaml_object(k_intel_rdt_fields, v, indent, out);
}
void yaml_value(const NetDevice& v, size_t indent, std::string& out) {
  yaml_object(k_net_device_fields, v, indent, out);
}
void yaml_value(const ContainerEdits& v, size_t indent, std::string& out) {
  yaml_object(k_container_edits_fields, v, indent, out);
}
void yaml_value(const Device& v, size_t indent, std::string& out) {
  yaml_object(k_device_fields, v, indent, out);
}

// A list item that is an object with members continues its "- " line; anything else is a value.
template <class T>
bool yaml_item_members(const T& item, size_t indent, std::string& out) {
  const auto write = [&](const auto& fields) {
    if (yaml_empty(fields, item)) {
      return false;
    }
    out += "- ";
    yaml_members(fields, item, indent + 2, true, out);
    return true;
  };
  if constexpr (std::is_same_v<T, DeviceNode>) {
    return write(k_device_node_fields);
  } else if constexpr (std::is_same_v<T, Mount>) {
    return write(k_mount_fields);
  } else if constexpr (std::is_same_v<T, Hook>) {
    return write(k_hook_fields);
  } else if constexpr (std::is_same_v<T, NetDevice>) {
    return write(k_net_device_fields);
  } else if constexpr (std::is_same_v<T, Device>) {
    return write(k_device_fields);
  } else {
    return false;  // scalars
  }
}

template <class T>
void yaml_value(const std::vector<T>& value, size_t indent, std::string& out) {
  if (value.empty()) {
    yaml_scalar("[]", out);
    return;
  }
  out += '\n';
  for (const auto& item : value) {
    out.append(indent + 2, ' ');
    if (!yaml_item_members(item, indent + 2, out)) {
      out += '-';
      yaml_value(item, indent + 2, out);
    }
  }
}

}  // namespace

Result<Format> format_for_path(std::string_view path) {
  const auto slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (name.ends_with(".json")) {
    return Format::json;
  }
  if (name.ends_with(".yaml")) {
    return Format::yaml;
  }
  const auto dot = name.rfind('.');
  const std::string extension = dot == std::string_view::npos ? "" : std::string(name.substr(dot));
  return fail("unsupported file extension " + quote(extension) + " (CDI reads only .json and .yaml files)");
}

Result<void> check_spec_size(uint64_t bytes) {
  if (bytes > k_max_spec_bytes) {
    return fail("spec too large: " + std::to_string(bytes) + " bytes, more than the " +
                std::to_string(k_max_spec_bytes >> 20) + " MiB a spec may have");
  }
  return {};
}

Result<Spec> parse_spec(std::string_view text, Format format) {
  GPUCTK_TRY(check_spec_size(text.size()));
  GPUCTK_TRY_ASSIGN(auto root, format == Format::json ? read_json(text) : read_yaml(text));
  if (root.kind == Node::Kind::null) {
    return fail("no spec data");
  }
  Spec spec;
  GPUCTK_TRY(decode_object(root, "", k_spec_fields, spec));
  return spec;
}

std::string write_spec(const Spec& spec, Format format) {
  if (format == Format::json) {
    return encode_object(k_spec_fields, spec).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  }
  std::string out = "---\n";
  yaml_members(k_spec_fields, spec, 0, false, out);
  return out;
}

Result<DocNode> read_yaml_document(std::string_view text) {
  try {
    std::ispanstream stream(std::span<const char>(text.data(), text.size()));
    YAML::Parser parser(stream);
    YamlTreeBuilder builder;
    parser.HandleNextDocument(builder);  // the first document only, as YAML::Load reads
    return builder.take_root();
  } catch (const YamlTreeBuilder::Refused& refused) {
    return fail(refused.message);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) {
      return fail("YAML syntax error: " + e.msg);
    }
    return fail("YAML syntax error at line " + std::to_string(e.mark.line + 1) + ", column " +
                std::to_string(e.mark.column + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return fail(std::string("YAML: ") + e.what());
  }
}

}  // namespace gpuctk::cdi
