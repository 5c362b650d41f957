// DataParallel: what every data-parallel strategy does to a training step. Each rank holds a
// replica (or a shard) of the model, computes gradients on its own slice of the batch, and the
// strategy makes the update the same as one process would make on the whole batch:
//
//   dp.zero_grad();
//   dp.backward(loss);            // gradients, with communication overlapped where it can be
//   dp.step(max_grad_norm);       // finish communication, clip, update
//
// Strategies (one file each): ddp_naive, ddp, zero (stages 1 and 2), fsdp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace ringgrad::nn::parallel {

/// Builds the optimizer over the parameters a strategy hands it: the model's own (DDP) or
/// this rank's shards of them (ZeRO, FSDP), grouped as the caller grouped the originals.
using OptimizerFactory = std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup>)>;

/// Seconds and bytes of gradient communication, summed since the last reset.
struct CommStats {
  double wait_seconds = 0;  // time the training thread was blocked on communication
  double bytes = 0;         // bytes handed to collectives (nccl-tests' "size")
};

class DataParallel {
 public:
  /// Wraps `model` (the same on every rank after construction: rank 0's values are broadcast)
  /// and builds the optimizer over `groups` (parameters of `model`) with `make_optimizer`.
  DataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm, std::vector<ParamGroup> groups,
               const OptimizerFactory& make_optimizer);
  /// Removes the gradient hooks the strategy put on the parameters.
  virtual ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  Module& module() { return *model_; }
  Optimizer& optimizer() { return *optimizer_; }
  collectives::Communicator& comm() { return comm_; }
  /// "ddp-naive", "ddp", "zero1", "zero2" or "fsdp".
  virtual std::string name() const = 0;

  /// The model on a batch (call modules inside through operator() so hooks run).
  virtual Tensor forward(const Tensor& x) { return (*model_)(x); }
  /// Backward of this rank's loss. Outside no_sync() the gradients are reduced across ranks
  /// (averaged); inside, they only accumulate locally.
  virtual void backward(const Tensor& loss);
  /// Finishes the gradient reduction, clips the global gradient norm to `max_grad_norm` when
  /// positive, and updates the parameters. Returns the norm before clipping (0 when not clipping).
  double step(double max_grad_norm = 0);
  /// Clears gradients before the next step.
  virtual void zero_grad();
  void set_lr(double lr) { optimizer_->set_lr(lr); }

  /// RAII scope in which backward() accumulates gradients without communicating
  /// (torch's DDP.no_sync()): for k-step gradient accumulation, run k-1 backwards inside it.
  class NoSync {
   public:
    explicit NoSync(DataParallel& dp) : dp_(dp), previous_(dp.sync_enabled_) { dp.sync_enabled_ = false; }
    ~NoSync() { dp_.sync_enabled_ = previous_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DataParallel& dp_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }

  /// Collective: the whole training state — parameters by name, optimizer state as
  /// "optimizer.<state>.<parameter>" — complete on rank 0 (other ranks get an empty dict).
  StateDict full_state_dict();
  /// Loads a full state (any world size saved it): every rank passes the same dict and keeps
  /// its part. Throws std::invalid_argument naming a missing or mis-shaped entry.
  void load_full_state_dict(const StateDict& state);

  /// Bytes this rank keeps for parameters, gradients and optimizer state (ZeRO's measure).
  struct MemoryUse {
    double params = 0, grads = 0, optimizer = 0;
  };
  virtual MemoryUse memory_use() const;

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 protected:
  /// Makes every rank's gradients the average over ranks (or reduced shards), blocking.
  virtual void synchronize_gradients() = 0;
  /// After the optimizer step (ZeRO: all-gather the updated shards).
  virtual void after_step() {}
  /// Square of the global L2 norm of the gradients the optimizer will use.
  virtual double grad_norm_squared();
  /// The full value of parameter i / of optimizer state `name` of parameter i (collective
  /// for sharded strategies), and their inverse.
  virtual Tensor full_parameter(std::size_t i);
  virtual Tensor full_optimizer_state(std::size_t i, const std::string& name);
  virtual void load_parameter(std::size_t i, const Tensor& full);
  virtual void load_optimizer_state(std::size_t i, const std::string& name, const Tensor& full);

  /// Times `fn` into stats_.wait_seconds.
  void timed_wait(const std::function<void()>& fn);

  std::shared_ptr<Module> model_;
  collectives::Communicator& comm_;
  /// The model's parameters in group order, each once (tied weights appear once), with
  /// (group, index) of each in the optimizer.
  std::vector<Tensor> params_;
  std::vector<std::string> param_names_;
  std::vector<std::pair<std::size_t, std::size_t>> slot_;
  std::vector<ParamGroup> groups_;
  std::unique_ptr<Optimizer> optimizer_;
  bool sync_enabled_ = true;
  CommStats stats_;

  /// Subclasses whose optimizer does not run over the model's parameters call this from
  /// their constructor to build it over other tensors (shards), in the same group layout.
  void rebuild_optimizer(const std::vector<Tensor>& replacements, const OptimizerFactory& make_optimizer);

 private:
  void broadcast_from_rank0();
};

/// Knobs of the strategies that have them.
struct DataParallelOptions {
  /// DDP: bucket size in MiB (PyTorch's bucket_cap_mb).
  double bucket_cap_mb = 25;
  /// DDP: start each bucket's all-reduce from backward (true), or all of them after backward
  /// (false: the same communication without overlap, to measure what overlap hides).
  bool overlap = true;
  /// FSDP: the modules gathered one at a time (e.g. the transformer blocks); empty: each child
  /// of the model.
  std::vector<std::shared_ptr<Module>> fsdp_units;
};

/// Builds the strategy `name` ("ddp-naive", "ddp", "zero1", "zero2", "fsdp"). Throws
/// std::invalid_argument for an unknown name.
std::unique_ptr<DataParallel> make_data_parallel(const std::string& name, std::shared_ptr<Module> model,
                                                 collectives::Communicator& comm, std::vector<ParamGroup> groups,
                                                 const OptimizerFactory& make_optimizer,
                                                 const DataParallelOptions& options = {});

}  // namespace ringgrad::nn::parallel
