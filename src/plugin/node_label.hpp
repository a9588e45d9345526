#pragma once
// The node label that picks a per-node config (node_config.hpp), read from the Kubernetes API server
// (kube/client.hpp) by gpuctk-device-plugin: once at the start, then kept up to date by a watch in a thread
// of its own, which hands each change of the label's value to the daemon's poll loop through an eventfd.
// The node's other changes (its status, every few seconds on a real cluster) wake nothing.

#include <memory>
#include <optional>
#include <string>

#include "plugin/node_config.hpp"
#include "util/error.hpp"

namespace gpuctk::plugin {

class NodeLabel {
 public:
  // Reads the node options.node_name with the credentials of options.kubeconfig (or the pod's service
  // account), then watches it. Errors: the credentials', and the first read's:
  //   "read node n1 (in-cluster service account): GET /api/v1/nodes/n1: 404 Not Found: nodes \"n1\" not
  //   found"
  static Result<std::unique_ptr<NodeLabel>> start(const NodeConfigOptions& options);
  virtual ~NodeLabel() = default;

  // Readable when the label's value changed since the last value().
  [[nodiscard]] virtual int fd() const = 0;
  // The label's value now (nullopt: unset, or the node is gone); empties fd().
  virtual std::optional<std::string> value() = 0;
};

}  // namespace gpuctk::plugin
