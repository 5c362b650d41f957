// FutureThreads: where a process group completes the Futures that torch code holds (DDP's
// buckets, comm hooks), off ringgrad's worker. A callback chained on a Future may issue a
// collective and wait on its Future (PowerSGD's hooks do), so a task never waits for a thread:
// one is started whenever every thread is busy. They are joined when the process group goes,
// so no callback is left running while Python shuts down.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ringgrad::torch_backend {

class FutureThreads {
 public:
  FutureThreads() = default;
  /// Runs what was posted, then joins every thread.
  ~FutureThreads();
  FutureThreads(const FutureThreads&) = delete;
  FutureThreads& operator=(const FutureThreads&) = delete;

  /// Runs `task` on a free thread, starting one if none is.
  void post(std::function<void()> task);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::size_t idle_ = 0;  // threads waiting for a task
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ringgrad::torch_backend
