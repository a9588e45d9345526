#include "oci/spec_shape.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace gpuctk::oci {
namespace {

// Every struct reachable from `shape`, once.
void collect(const JsonShape* shape, std::set<const JsonShape*>& seen) {
  if (shape == nullptr || !seen.insert(shape).second) {
    return;
  }
  collect(shape->element, seen);
  for (const auto& field : shape->fields) {
    collect(field.shape, seen);
  }
}

TEST(OciSpecShape, NoTwoFieldsOfAStructFoldToTheSameName) {
  // Else an exact key could be refused as a case variant of its neighbour.
  std::set<const JsonShape*> shapes;
  collect(&config_shape(), shapes);
  collect(&state_shape(), shapes);
  size_t structs = 0;
  for (const auto* shape : shapes) {
    structs += shape->kind == JsonShape::Kind::object;
    for (size_t i = 0; i < shape->fields.size(); ++i) {
      for (size_t j = 0; j < shape->fields.size(); ++j) {
        EXPECT_TRUE(i == j || !go_equal_fold(shape->fields[i].name, shape->fields[j].name))
            << shape->fields[i].name << " / " << shape->fields[j].name;
      }
    }
  }
  // Every struct of runtime-spec 1.3.0's config.go (62: LinuxBlockIODevice is embedded, its fields are
  // listed where it is), and State.
  EXPECT_EQ(structs, 63u);
}

TEST(OciSpecShape, EveryPlaceGpuctkEditsIsChecked) {
  // The keys gpuctk reads or writes: a case variant of any of them is refused.
  for (const std::string_view text : {
           R"({"Mounts":[]})",
           R"({"mounts":[{"Source":"/x"}]})",
           R"({"process":{"Env":[]}})",
           R"({"process":{"user":{"AdditionalGids":[]}}})",
           R"({"root":{"Path":"/"}})",
           R"({"linux":{"Devices":[]}})",
           R"({"linux":{"devices":[{"Major":1}]}})",
           R"({"linux":{"resources":{"Devices":[]}}})",
           R"({"linux":{"resources":{"devices":[{"Allow":true}]}}})",
           R"({"hooks":{"createContainer":[{"Env":[]}]}})",
           R"({"Annotations":{}})",
           R"({"linux":{"IntelRdt":{}}})",
           R"({"linux":{"netDevices":{"eth0":{"Name":"x"}}}})",
       }) {
    const auto doc = parse_json(text, "config.json", &config_shape());
    EXPECT_FALSE(doc) << text;
  }
}

}  // namespace
}  // namespace gpuctk::oci
