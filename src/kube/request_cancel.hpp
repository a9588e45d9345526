#pragma once
// A thread's requests cancelled by a flag. ObjectWatch::stop() must return within about a second even while
// its thread waits on a GET to a server that does not answer; Client::request has no stop argument (its
// callers are short-lived), so the watch's thread names its flag here, and every transfer that thread
// makes checks it as a watch checks its `stop`.

#include <atomic>

namespace gpuctk::kube {

class RequestCancel {
 public:
  // While this lives, the requests of the calling thread end (an ApiError with status 0, "cancelled")
  // within about 200 ms of `flag` turning true.
  explicit RequestCancel(const std::atomic<bool>& flag);
  RequestCancel(const RequestCancel&) = delete;
  RequestCancel& operator=(const RequestCancel&) = delete;
  ~RequestCancel();

  // Whether the calling thread's requests are to end now.
  static bool cancelled();

 private:
  const std::atomic<bool>* m_previous;
};

}  // namespace gpuctk::kube
