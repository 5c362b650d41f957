// Fully sharded data parallelism (ZeRO stage 3; PyTorch FSDP, Zhao et al., VLDB 2023): between
// uses, a rank holds only its shard of every parameter. The model is cut into units (e.g. the
// transformer blocks); a unit's parameters are all-gathered just before its forward and freed
// right after, all-gathered again just before its backward, and once its gradients are complete
// they are reduce-scattered to the shard owners and the full copies freed. Parameters that
// belong to no unit (embeddings, the final norm and head) form the root unit, gathered for the
// whole step.
//
// Per rank, with N ranks: (4P + 4P + 8P) / N for parameters, gradients and Adam's state, plus
// one or two units in full at a time.
//
// Unlike DDP, backward() does not leave averaged full gradients. Outside no_sync(), p.grad() is
// undefined when it returns: each unit whose gradients all arrived sent them to the owners and
// freed them, and its parameters too (the root unit's stay gathered until step()). The averaged
// shards arrive in step(). Inside no_sync(), p.grad() accumulates this rank's own gradient.
#pragma once

#include <vector>

#include "nn/parallel/data_parallel/sharded.h"

namespace ringgrad::nn::parallel {

class FullyShardedDataParallel : public ShardedDataParallel {
 public:
  /// `units`: child modules of `model` (at any depth) gathered one at a time; empty: each
  /// direct child of the model. Throws std::invalid_argument when a parameter is in two units.
  FullyShardedDataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm,
                           std::vector<ParamGroup> groups, const OptimizerFactory& make_optimizer,
                           std::vector<std::shared_ptr<Module>> units);
  std::string name() const override { return "fsdp"; }
  void backward(const Tensor& loss) override;
  void zero_grad() override;

 protected:
  void before_step() override;
  Tensor full_parameter(std::size_t i) override;
  void load_parameter(std::size_t i, const Tensor& full) override;

 private:
  struct Unit {
    std::vector<std::size_t> members;  // indices into params_
    std::size_t pending = 0;           // gradients not yet complete in this backward
    bool gathered = false;
    bool reduced = false;
  };
  void gather(Unit& unit);
  void release(Unit& unit);
  void on_gradient_ready(Unit& unit);
  /// After the unit's forward: free it, and arrange for a gather before its backward.
  Tensor after_forward(Unit& unit, const Tensor& output);

  std::vector<Unit> units_;  // the last one is the root unit
  std::vector<autograd::RemovableHandle> forward_hooks_;  // removed with this strategy, a user's stay
};

}  // namespace ringgrad::nn::parallel
