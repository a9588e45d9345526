#include "dra/claim_spec.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "cdi/codec.hpp"
#include "cdi/validate.hpp"
#include "cdi/version.hpp"
#include "dra/claims.hpp"
#include "util/file.hpp"
#include "util/strings.hpp"

namespace gpuctk::dra {

namespace {

// The node spec's device `name`; nullptr when it has none.
const cdi::Device* node_device(const cdi::Spec& node_spec, std::string_view name) {
  const auto it = std::ranges::find(node_spec.devices, name, &cdi::Device::name);
  return it == node_spec.devices.end() ? nullptr : &*it;
}

// Makes `dir` (mode 0755 whatever the umask) when it is missing; its parent must exist.
Result<void> make_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) {
    if (::chmod(dir.c_str(), 0755) != 0) {
      return fail_errno("chmod " + dir, errno);
    }
    return {};
  }
  if (errno == EEXIST) {
    return {};
  }
  return fail_errno("mkdir " + dir, errno);
}

}  // namespace

std::string claim_device_name(std::string_view claim_uid, std::string_view device) {
  return std::string(claim_uid) + "-" + std::string(device);
}

std::string claim_cdi_id(std::string_view claim_uid, std::string_view device) {
  return std::string(k_claim_cdi_vendor) + "/" + std::string(k_claim_cdi_class) + "=" +
         claim_device_name(claim_uid, device);
}

std::string claim_spec_path(std::string_view cdi_dir, std::string_view claim_uid) {
  std::string path(cdi_dir);
  if (!path.ends_with('/')) {
    path += '/';
  }
  return path + std::string(k_claim_cdi_vendor) + "-" + std::string(k_claim_cdi_class) + "_" +
         std::string(claim_uid) + ".yaml";
}

Result<cdi::Spec> build_claim_spec(const cdi::Spec& node_spec, std::string_view claim_uid,
                                   std::span<const Device> devices) {
  GPUCTK_TRY(check_claim_uid(claim_uid));
  cdi::Spec spec;
  spec.kind = std::string(k_claim_cdi_vendor) + "/" + std::string(k_claim_cdi_class);
  spec.container_edits = node_spec.container_edits;
  for (const auto& device : devices) {
    const std::string name = claim_device_name(claim_uid, device.name);
    if (std::ranges::find(spec.devices, name, &cdi::Device::name) != spec.devices.end()) {
      continue;  // a device shared by two requests of the claim is one CDI device
    }
    const cdi::Device* source = node_device(node_spec, device.cdi_name);
    if (source == nullptr) {
      return fail("device " + device.name + ": not in the node spec (no device " + quote(device.cdi_name) +
                  ")");
    }
    spec.devices.push_back(cdi::Device{.name = name, .container_edits = source->container_edits});
  }
  spec.cdi_version = cdi::minimum_version(spec).version.str();
  GPUCTK_TRY(cdi::check_generated(spec));
  return spec;
}

Result<void> write_claim_spec(const std::string& cdi_dir, std::string_view claim_uid,
                              const cdi::Spec& node_spec, std::span<const Device> devices) {
  GPUCTK_TRY_ASSIGN(const auto spec, build_claim_spec(node_spec, claim_uid, devices));
  GPUCTK_TRY(make_dir(cdi_dir));
  // Never synced: a claim spec lives as long as its containers, which a reboot ends (the kubelet prepares
  // the claims again for the pods it restarts); /var/run/cdi is a tmpfs on most nodes anyway.
  return write_file_atomic(claim_spec_path(cdi_dir, claim_uid), cdi::write_spec(spec, cdi::Format::yaml),
                           0644, Durability::atomic_only);
}

bool claim_spec_exists(const std::string& cdi_dir, std::string_view claim_uid) {
  struct stat st {};
  return check_claim_uid(claim_uid) && ::lstat(claim_spec_path(cdi_dir, claim_uid).c_str(), &st) == 0;
}

Result<void> remove_claim_spec(const std::string& cdi_dir, std::string_view claim_uid) {
  GPUCTK_TRY(check_claim_uid(claim_uid));
  const std::string path = claim_spec_path(cdi_dir, claim_uid);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return fail_errno("remove " + path, errno);
  }
  return {};
}

}  // namespace gpuctk::dra
