// FutureThreads: a pool that grows whenever every thread is busy.
#include "collectives/torch/future_threads.h"

namespace ringgrad::torch_backend {

FutureThreads::~FutureThreads() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void FutureThreads::post(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  tasks_.push_back(std::move(task));
  if (tasks_.size() > idle_) threads_.emplace_back([this] { loop(); });  // every thread is taken
  else cv_.notify_one();
}

void FutureThreads::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    --idle_;
    if (tasks_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace ringgrad::torch_backend
