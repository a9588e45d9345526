#pragma once
// The CDI spec of one prepared claim, as NVIDIA's DRA driver writes it (cmd/gpu-kubelet-plugin/cdi.go): a
// transient spec of kind k8s.gpu.nvidia.com/claim in the CDI directory, one device per allocated device
// named "<claim uid>-<DRA device name>", so the runtime is asked for
// "k8s.gpu.nvidia.com/claim=<uid>-gpu-0". gpuctk builds it from its node spec (cdi::build_spec of the
// inventory): the node spec's common edits (driver files, control nodes, the container-start hook, env),
// and for each device the edits of the node spec's device that is Device::cdi_name. The file lives as long
// as the claim is prepared: NodeUnprepareResources removes it.

#include <span>
#include <string>
#include <string_view>

#include "cdi/spec.hpp"
#include "dra/devices.hpp"
#include "util/error.hpp"

namespace gpuctk::dra {

// The claim specs' vendor and class (NVIDIA's "k8s." + driver name, class "claim").
inline constexpr std::string_view k_claim_cdi_vendor = "k8s.gpu.nvidia.com";
inline constexpr std::string_view k_claim_cdi_class = "claim";
// Where runtimes look for transient specs, and NVIDIA's default.
inline constexpr std::string_view k_default_cdi_dir = "/var/run/cdi";

// "<uid>-<device>": the claim device's name in its spec.
std::string claim_device_name(std::string_view claim_uid, std::string_view device);
// "k8s.gpu.nvidia.com/claim=<uid>-<device>": what the kubelet hands the runtime.
std::string claim_cdi_id(std::string_view claim_uid, std::string_view device);
// "<dir>/k8s.gpu.nvidia.com-claim_<uid>.yaml" (the CDI library's GenerateTransientSpecName).
std::string claim_spec_path(std::string_view cdi_dir, std::string_view claim_uid);

// The claim's spec: the common edits of `node_spec`, and one device per entry of `devices` (in their
// order, each once) with the edits of the node spec's device named its cdi_name. cdiVersion is the
// lowest the content needs (cdi::minimum_version), and the spec passes cdi::check_generated. Errors:
//   claim uid "x" is not a UID (want 8-4-4-4-12 hexadecimal digits)
//   device gpu-3: not in the node spec (no device "3")
//   generated k8s.gpu.nvidia.com/claim spec is invalid: <where>: <what>
Result<cdi::Spec> build_claim_spec(const cdi::Spec& node_spec, std::string_view claim_uid,
                                   std::span<const Device> devices);

// build_claim_spec, written to claim_spec_path(cdi_dir, uid) as gpuctk writes specs (YAML, atomically:
// a temporary file in the same directory, fsync, rename; mode 0644). A missing `cdi_dir` is made, mode
// 0755 (its parent must exist). Errors name the file: "write /var/run/cdi/k8s...yaml: rename: ...".
Result<void> write_claim_spec(const std::string& cdi_dir, std::string_view claim_uid,
                              const cdi::Spec& node_spec, std::span<const Device> devices);

// Whether the claim's spec file is there (anything at its path, as the runtime would try to read it).
bool claim_spec_exists(const std::string& cdi_dir, std::string_view claim_uid);

// Removes the claim's spec file; success when there is none. Errors: the uid's, or
// "remove /var/run/cdi/k8s...yaml: Permission denied".
Result<void> remove_claim_spec(const std::string& cdi_dir, std::string_view claim_uid);

}  // namespace gpuctk::dra
