#pragma once
// gpuctk-dra-plugin's ResourceSlices kept as they should be, in a thread of its own: a list of this node's
// slices of the driver (fieldSelector spec.nodeName, spec.driver), compared with what build_slices makes
// of the devices and their taints now; when anything differs the pool's generation is raised and every
// slice written (created, replaced, the extra ones deleted), so that the scheduler never mixes two
// generations. Then a watch of the same slices from the version after those writes: any event on them is
// someone else's (the kubelet wipes a node's slices at its start, a person deletes one) and starts the
// next round, as does poke() (taints changed, a rediscovery). Errors are logged and tried again after 1 s,
// doubling to 30 s.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dra/devices.hpp"
#include "dra/taints.hpp"
#include "kube/client.hpp"

namespace gpuctk::dra {

class Publisher {
 public:
  struct Inputs {
    std::vector<Device> devices;
    Taints taints;
  };
  // `current` gives the devices and taints to publish now; `log` gets each round's outcome and error.
  static std::unique_ptr<Publisher> start(kube::Client client, std::string node_name,
                                          std::function<Inputs()> current,
                                          std::function<void(const std::string&)> log);
  virtual ~Publisher() = default;
  // The inputs changed: a round starts within the watch's poll (200 ms).
  virtual void poke() = 0;
  // Ends the thread (within about a second); the slices stay, as the kubelet removes a gone driver's.
  virtual void stop() = 0;
};

}  // namespace gpuctk::dra
