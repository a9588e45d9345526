// Which container a precreate log line is about, from config.json alone.
#include "inject/container_label.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpuctk::inject {
namespace {

using Json = nlohmann::ordered_json;

TEST(ContainerLabel, KubernetesNamesFromEitherEngine) {
  EXPECT_EQ(container_label(Json{{"hostname", "trainer-0"},
                                 {"annotations",
                                  {{"io.kubernetes.pod.namespace", "ml"},
                                   {"io.kubernetes.pod.name", "trainer-0"},
                                   {"io.kubernetes.container.name", "cuda"}}}}),
            "container cuda of pod ml/trainer-0");
  EXPECT_EQ(container_label(Json{{"annotations",
                                  {{"io.kubernetes.cri.sandbox-namespace", "default"},
                                   {"io.kubernetes.cri.sandbox-name", "web"},
                                   {"io.kubernetes.cri.container-name", "app"}}}}),
            "container app of pod default/web");
  // A pod's sandbox has no container name.
  EXPECT_EQ(container_label(Json{{"annotations", {{"io.kubernetes.cri.sandbox-name", "web"}}}}),
            "container (unnamed) of pod web");
}

// podman's default hostname is the container's short id.
TEST(ContainerLabel, OtherwiseTheHostname) {
  EXPECT_EQ(container_label(
                Json{{"hostname", "382a12181436"}, {"annotations", {{"io.container.manager", "libpod"}}}}),
            "container with hostname 382a12181436");
  EXPECT_EQ(container_label(Json{{"hostname", 3}}), "container without hostname");
  EXPECT_EQ(container_label(Json::array()), "container without hostname");
  EXPECT_EQ(container_label(Json{{"hostname", std::string(1000, 'h')}}),
            "container with hostname " + std::string(k_max_label_part, 'h'));
}

}  // namespace
}  // namespace gpuctk::inject
