// Naive data parallelism, the baseline: after backward, all-reduce every gradient, one at a
// time, and divide by the world size. Correct and simple; nothing overlaps, and every small
// tensor pays a full collective latency. As with ddp, p.grad() is the average over ranks when
// backward() returns (outside no_sync()).
#pragma once

#include "nn/parallel/data_parallel/data_parallel.h"

namespace ringgrad::nn::parallel {

class NaiveDataParallel : public DataParallel {
 public:
  using DataParallel::DataParallel;
  std::string name() const override { return "ddp-naive"; }
  void backward(const Tensor& loss) override;
  void sync_gradients() override;
};

}  // namespace ringgrad::nn::parallel
