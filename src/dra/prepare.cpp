#include "dra/prepare.hpp"

#include <algorithm>
#include <utility>

#include "dra/claim_spec.hpp"
#include "util/k8s_names.hpp"
#include "util/strings.hpp"

namespace gpuctk::dra {

namespace {

Result<void> check_config(const PreparerConfig& config) {
  if (!is_dns_subdomain(config.node_name)) {
    return fail("node name " + quote(config.node_name) + " is not a DNS subdomain");
  }
  if (config.driver.empty()) {
    return fail("no driver name");
  }
  if (!config.cdi_dir.starts_with('/')) {
    return fail("cdi dir " + quote(config.cdi_dir) + " is not an absolute path");
  }
  if (!config.checkpoint_path.starts_with('/')) {
    return fail("checkpoint path " + quote(config.checkpoint_path) + " is not an absolute path");
  }
  return {};
}

// The answer for `allocated`: one device per distinct pool and device, in the claim's order, with every
// request that got it (a device shared by two requests is one CDI device).
std::vector<PreparedDevice> answer_of(std::string_view uid, const std::vector<AllocatedDevice>& allocated) {
  std::vector<PreparedDevice> out;
  for (const auto& a : allocated) {
    const auto same = [&](const PreparedDevice& p) { return p.pool == a.pool && p.device == a.device; };
    if (const auto it = std::ranges::find_if(out, same); it != out.end()) {
      it->requests.push_back(a.request);
      continue;
    }
    out.push_back(PreparedDevice{{a.request}, a.pool, a.device, {claim_cdi_id(uid, a.device)}});
  }
  return out;
}

std::vector<std::string> device_names(const std::vector<PreparedDevice>& devices) {
  std::vector<std::string> names;
  for (const auto& device : devices) {
    names.push_back(device.device);
  }
  return names;
}

std::string error_of(const ClaimRef& ref, const Error& error) {
  return "claim " + claim_text(ref) + ": " + error.message;
}

}  // namespace

Preparer::Preparer(Key /*key*/, PreparerConfig config, cdi::Spec node_spec, std::vector<Device> devices,
                   Checkpoint checkpoint)
    : m_config(std::move(config)),
      m_node_spec(std::move(node_spec)),
      m_devices(std::move(devices)),
      m_checkpoint(std::move(checkpoint)) {}

Result<std::unique_ptr<Preparer>> Preparer::open(PreparerConfig config, cdi::Spec node_spec,
                                                 std::vector<Device> devices) {
  GPUCTK_TRY(check_config(config));
  GPUCTK_TRY_ASSIGN(auto checkpoint, read_checkpoint(config.checkpoint_path));
  return std::make_unique<Preparer>(Key{}, std::move(config), std::move(node_spec), std::move(devices),
                                    std::move(checkpoint));
}

std::map<std::string, PrepareResult> Preparer::prepare(const std::vector<ClaimRef>& claims,
                                                       const ClaimFetch& fetch) {
  std::map<std::string, PrepareResult> results;
  for (const auto& ref : claims) {
    auto devices = prepare_claim(ref, fetch);
    results[ref.uid] =
        devices ? PrepareResult{std::move(*devices), {}} : PrepareResult{{}, devices.error().message};
  }
  return results;
}

std::map<std::string, std::string> Preparer::unprepare(const std::vector<ClaimRef>& claims) {
  std::map<std::string, std::string> results;
  for (const auto& ref : claims) {
    auto done = unprepare_claim(ref);
    results[ref.uid] = done ? std::string() : done.error().message;
  }
  return results;
}

void Preparer::set_inventory(cdi::Spec node_spec, std::vector<Device> devices) {
  const std::scoped_lock lock(m_mutex);
  m_node_spec = std::move(node_spec);
  m_devices = std::move(devices);
}

std::vector<ClaimRef> Preparer::prepared() const {
  const std::scoped_lock lock(m_mutex);
  std::vector<ClaimRef> refs;
  for (const auto& [uid, claim] : m_checkpoint.claims) {
    refs.push_back(ClaimRef{claim.namespace_name, uid, claim.name});
  }
  return refs;
}

Result<std::vector<PreparedDevice>> Preparer::prepare_claim(const ClaimRef& ref, const ClaimFetch& fetch) {
  GPUCTK_TRY(check_claim_ref(ref));
  {
    const std::scoped_lock lock(m_mutex);
    if (const auto it = m_checkpoint.claims.find(ref.uid); it != m_checkpoint.claims.end()) {
      return answer_prepared(ref, it->second);
    }
  }
  auto claim = fetch(ref.namespace_name, ref.name);
  if (!claim) {
    return fail(error_of(ref, claim.error()));
  }
  auto allocated = allocated_devices(*claim, ref, m_config.node_name, m_config.driver);
  if (!allocated) {
    return fail(error_of(ref, allocated.error()));
  }
  const std::scoped_lock lock(m_mutex);
  if (const auto it = m_checkpoint.claims.find(ref.uid); it != m_checkpoint.claims.end()) {
    return answer_prepared(ref, it->second);  // prepared by a concurrent call meanwhile
  }
  return prepare_allocated(ref, *allocated);
}

Result<std::vector<PreparedDevice>> Preparer::answer_prepared(const ClaimRef& ref,
                                                              const PreparedClaim& claim) {
  if (!claim_spec_exists(m_config.cdi_dir, ref.uid)) {
    GPUCTK_TRY_ASSIGN(const auto devices, published(ref, device_names(claim.devices)));
    if (auto written = write_claim_spec(m_config.cdi_dir, ref.uid, m_node_spec, devices); !written) {
      return fail(error_of(ref, written.error()));
    }
  }
  return claim.devices;
}

Result<std::vector<PreparedDevice>> Preparer::prepare_allocated(
    const ClaimRef& ref, const std::vector<AllocatedDevice>& allocated) {
  auto answer = answer_of(ref.uid, allocated);
  GPUCTK_TRY_ASSIGN(const auto devices, published(ref, device_names(answer)));
  if (auto written = write_claim_spec(m_config.cdi_dir, ref.uid, m_node_spec, devices); !written) {
    return fail(error_of(ref, written.error()));
  }
  Checkpoint next = m_checkpoint;
  next.claims[ref.uid] = PreparedClaim{ref.namespace_name, ref.name, answer};
  if (auto saved = write_checkpoint(m_config.checkpoint_path, next); !saved) {
    // Not prepared, so no spec: the kubelet retries, or never starts the pod.
    (void)remove_claim_spec(m_config.cdi_dir, ref.uid);
    return fail(error_of(ref, saved.error()));
  }
  m_checkpoint = std::move(next);
  return answer;
}

Result<std::vector<Device>> Preparer::published(const ClaimRef& ref,
                                                const std::vector<std::string>& names) const {
  std::vector<Device> devices;
  for (const auto& name : names) {
    const auto it = std::ranges::find(m_devices, name, &Device::name);
    if (it == m_devices.end()) {
      // A device can vanish after allocation: a MIG reconfiguration, a GPU fallen off the bus.
      return fail("device " + escape_for_log(name) + " of claim " + claim_text(ref) + " is not on this node");
    }
    devices.push_back(*it);
  }
  return devices;
}

Result<void> Preparer::unprepare_claim(const ClaimRef& ref) {
  GPUCTK_TRY(check_claim_ref(ref));
  const std::scoped_lock lock(m_mutex);
  if (auto removed = remove_claim_spec(m_config.cdi_dir, ref.uid); !removed) {
    return fail(error_of(ref, removed.error()));
  }
  if (!m_checkpoint.claims.contains(ref.uid)) {
    return {};
  }
  Checkpoint next = m_checkpoint;
  next.claims.erase(ref.uid);
  if (auto saved = write_checkpoint(m_config.checkpoint_path, next); !saved) {
    return fail(error_of(ref, saved.error()));
  }
  m_checkpoint = std::move(next);
  return {};
}

}  // namespace gpuctk::dra
