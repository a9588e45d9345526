#pragma once
// Which container a log line is about, in words, from what the precreate hook has: config.json alone (no
// id, no bundle). A Kubernetes container is named by the names its engine's CRI annotations carry; any
// other by its hostname, which podman sets to the container's short id unless --hostname names another.
// (The shim and the prestart hook know the container's id and say "container <id>".)

#include <string>

#include <nlohmann/json_fwd.hpp>

namespace gpuctk::inject {

// "container cuda of pod default/trainer-0" (CRI-O's io.kubernetes.pod.* / io.kubernetes.container.name,
// containerd's io.kubernetes.cri.*), else "container with hostname 382a12181436", else "container without
// hostname". Each value is cut at k_max_label_part bytes; the log escapes the rest.
std::string container_label(const nlohmann::ordered_json& config);

// Kubernetes names are at most 253 bytes; anything longer is cut here, so a label stays short.
inline constexpr size_t k_max_label_part = 253;

}  // namespace gpuctk::inject
