#pragma once
// NodePrepareResources and NodeUnprepareResources as gpuctk-dra-plugin decides them, below the gRPC daemon:
// for each claim the kubelet names, the CDI ids of its devices (after its claim spec and the checkpoint
// are written), or one line saying why that claim alone cannot be prepared. What NVIDIA's driver does
// (cmd/gpu-kubelet-plugin/device_state.go): a claim already prepared is answered from the checkpoint
// (the kubelet retries, and asks again after a restart); unpreparing removes the claim spec, then the
// checkpoint entry, and an unknown claim is already unprepared. Nothing is logged here: the daemon logs
// the answers.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cdi/spec.hpp"
#include "dra/checkpoint.hpp"
#include "dra/claims.hpp"
#include "dra/devices.hpp"
#include "util/error.hpp"

namespace gpuctk::dra {

// The answer for one claim: its devices, or `error` (not empty) and no device.
struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;
  bool operator==(const PrepareResult&) const = default;
};

// Reads the ResourceClaim `namespace_name`/`name` from the API server (the daemon's client; a fake in
// tests). Called without the Preparer's lock held, so a slow API server delays only that claim.
using ClaimFetch =
    std::function<Result<nlohmann::json>(const std::string& namespace_name, const std::string& name)>;

struct PreparerConfig {
  std::string node_name;  // this node, and the name of its devices' pool
  std::string driver = std::string(k_driver_name);
  std::string cdi_dir;          // where claim specs are written (/var/run/cdi)
  std::string checkpoint_path;  // k_default_checkpoint_path; its directory must exist
};

// Thread-safe: the kubelet may call prepare and unprepare concurrently. The claim specs and the checkpoint
// are written under one lock, the claims are fetched outside it.
class Preparer {
  struct Key {
    explicit Key() = default;
  };

 public:
  // A Preparer for the node spec (cdi::build_spec of the inventory) and the devices published from the
  // same inventory, with the claims of the checkpoint at config.checkpoint_path prepared. Errors: the
  // checkpoint's (the daemon must not start and forget prepared claims), or the config's:
  // "node name \"\" is not a DNS subdomain", "cdi dir \"x\" is not an absolute path".
  static Result<std::unique_ptr<Preparer>> open(PreparerConfig config, cdi::Spec node_spec,
                                                std::vector<Device> devices);

  // Each claim's answer, by UID. A claim in the checkpoint is answered from it without fetching (its spec
  // is written again when its file is gone); another is fetched, its results of this driver in this node's
  // pool (allocated_devices) must each be a published device, then its spec and the checkpoint are
  // written. One PreparedDevice per allocated device, with every request that got it, and the one CDI id
  // k8s.gpu.nvidia.com/claim=<uid>-<device>. Errors name the claim: "claim ns/name: not allocated",
  // "device gpu-3 of claim ns/name is not on this node", "claim ns/name: <fetch's error>".
  std::map<std::string, PrepareResult> prepare(const std::vector<ClaimRef>& claims, const ClaimFetch& fetch);

  // Each claim's error by UID, "" when it is unprepared: its spec removed (one left without a checkpoint
  // entry too), then its checkpoint entry. A claim this plugin never prepared is unprepared already.
  std::map<std::string, std::string> unprepare(const std::vector<ClaimRef>& claims);

  // The inventory after a rediscovery: claims prepared from now on use it. Prepared claims keep their
  // specs and answers.
  void set_inventory(cdi::Spec node_spec, std::vector<Device> devices);

  // The prepared claims, by UID.
  [[nodiscard]] std::vector<ClaimRef> prepared() const;

  Preparer(Key /*key*/, PreparerConfig config, cdi::Spec node_spec, std::vector<Device> devices,
           Checkpoint checkpoint);

 private:
  Result<std::vector<PreparedDevice>> prepare_claim(const ClaimRef& ref, const ClaimFetch& fetch);
  // The lock is held for these.
  Result<std::vector<PreparedDevice>> answer_prepared(const ClaimRef& ref, const PreparedClaim& claim);
  Result<std::vector<PreparedDevice>> prepare_allocated(const ClaimRef& ref,
                                                        const std::vector<AllocatedDevice>& allocated);
  Result<std::vector<Device>> published(const ClaimRef& ref, const std::vector<std::string>& names) const;
  Result<void> unprepare_claim(const ClaimRef& ref);

  mutable std::mutex m_mutex;
  const PreparerConfig m_config;
  cdi::Spec m_node_spec;
  std::vector<Device> m_devices;
  Checkpoint m_checkpoint;  // what the file holds
};

}  // namespace gpuctk::dra
