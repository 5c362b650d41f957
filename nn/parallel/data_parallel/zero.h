// ZeRO stages 1 and 2 (Rajbhandari et al., SC 2020): every rank keeps the full parameters but
// only its shard of the optimizer state (stage 1), and of the reduced gradients (stage 2).
// A step: reduce-scatter the gradients (each rank receives the average of its shard), update
// the shard, all-gather the updated shards into every rank's full parameters.
//
// Per rank, with N ranks and P parameters of 4 bytes and Adam's two moments:
//   DDP 4P + 4P + 8P;  stage 1 4P + 4P + 8P/N;  stage 2 4P + 4P/N + 8P/N (plus buffers in flight).
//
// Unlike DDP, backward() does not leave averaged full gradients. Stage 1: p.grad() holds this
// rank's own (unaveraged) gradient until zero_grad(); step() reduce-scatters it. Stage 2:
// p.grad() is undefined after a backward outside no_sync() (each gradient was sent from its
// hook and freed; inside no_sync() it accumulates locally), and the averaged shards arrive in
// step(). Either way the averaged gradient exists only as this rank's shard, during step().
#pragma once

#include "nn/parallel/data_parallel/sharded.h"

namespace ringgrad::nn::parallel {

class ZeroDataParallel : public ShardedDataParallel {
 public:
  /// `stage` 1: gradients reduce-scattered after backward, full gradients kept until
  /// zero_grad. `stage` 2: each gradient is reduce-scattered from its autograd hook as soon as
  /// it is complete, and the full gradient freed. Throws std::invalid_argument for other stages.
  ZeroDataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm, std::vector<ParamGroup> groups,
                   const OptimizerFactory& make_optimizer, int stage);
  std::string name() const override { return stage_ == 1 ? "zero1" : "zero2"; }
  void backward(const Tensor& loss) override;
  void zero_grad() override;

 protected:
  void before_step() override;
  void after_step() override;

 private:
  int stage_;
  std::vector<bool> reduced_;  // stage 2: gradient i already sent in this backward
};

}  // namespace ringgrad::nn::parallel
