// DataParallel: what every data-parallel strategy shares. Each rank holds a replica (or a
// shard) of the model, computes gradients on its own slice of the batch, and the strategy
// makes the update the same as one process would make on the whole batch:
//
//   dp.zero_grad();
//   dp.backward(loss);            // gradients, communication overlapped where it can be
//   dp.step(max_grad_norm);       // finish what backward left, clip, update
//
// Strategies (one file each): ddp_naive, ddp, zero (stages 1 and 2), fsdp; make_data_parallel.h
// picks one by name, training_state.h gathers checkpoints and counts memory.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/hooks.h"
#include "collectives/communicator.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace ringgrad::nn::parallel {

/// Builds the optimizer over the parameters a strategy hands it: the model's own (DDP) or
/// this rank's shards of them (ZeRO, FSDP), grouped as the caller grouped the originals.
using OptimizerFactory = std::function<std::unique_ptr<Optimizer>(std::vector<ParamGroup>)>;

/// What a strategy counts of its own communication (gradients, and the sharded strategies'
/// parameter gathers), summed since the last reset; the communicator counts every call it is
/// asked for in collectives::CommStats.
struct DataParallelStats {
  double wait_seconds = 0;  // time the training thread was blocked on communication
  double bytes = 0;         // bytes handed to collectives (nccl-tests' "size")
};

struct MemoryUse;

class DataParallel {
 public:
  /// Wraps `model` (the same on every rank after construction: rank 0's values are broadcast)
  /// and builds the optimizer over `groups` (parameters of `model`) with `make_optimizer`.
  /// `replicated(name)` false keeps a parameter's own value on each rank instead (expert
  /// parallelism's experts, different on each rank); empty: every parameter is broadcast.
  DataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm, std::vector<ParamGroup> groups,
               const OptimizerFactory& make_optimizer,
               const std::function<bool(const std::string& name)>& replicated = {});
  /// Removes the hooks the strategy put on the parameters, and only those.
  virtual ~DataParallel() = default;
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  Module& module() { return *model_; }
  Optimizer& optimizer() { return *optimizer_; }
  collectives::Communicator& comm() { return comm_; }
  /// "ddp-naive", "ddp", "zero1", "zero2" or "fsdp".
  virtual std::string name() const = 0;

  /// The model on a batch (call modules inside through operator() so hooks run).
  Tensor forward(const Tensor& x) { return (*model_)(x); }
  /// Backward of this rank's loss. Outside no_sync() the gradients are reduced across ranks
  /// (averaged); inside, they only accumulate locally. What p.grad() holds when it returns is
  /// the strategy's (its header says): DDP's are already the average over ranks.
  virtual void backward(const Tensor& loss) { ringgrad::backward(loss); }
  /// For a caller whose backward is not one loss's (a pipeline schedule runs one backward per
  /// micro-batch, all inside no_sync()): reduces across ranks what those backwards accumulated,
  /// as a backward outside no_sync() would have. DDP and ddp-naive all-reduce here, so p.grad()
  /// is the average when it returns; ZeRO and FSDP leave it to step()'s reduce-scatter.
  virtual void sync_gradients() {}
  /// Finishes the gradient communication backward left (ZeRO, FSDP), clips the global gradient
  /// norm to `max_grad_norm` when positive, and updates the parameters. Returns the norm before
  /// clipping (0 when not clipping).
  double step(double max_grad_norm = 0);
  /// Clears gradients before the next step.
  virtual void zero_grad() { optimizer_->zero_grad(); }
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

  /// Model parallelism: when each rank holds a piece of the model, the norm step() clips by
  /// must still be the whole model's. `counts(name)` says whether this rank's copy of a
  /// parameter adds to it (a replica held by several ranks counts on one of them), and the sum
  /// of squares is also added up over `groups` (the tensor- and pipeline-parallel groups), which
  /// every rank of this strategy calls with it. Default: every parameter, this strategy's ranks.
  struct NormScope {
    std::function<bool(const std::string& name)> counts;
    std::vector<collectives::Communicator*> groups;
  };
  void set_norm_scope(NormScope scope) { norm_scope_ = std::move(scope); }
  /// Multiplies the reduced gradients by `factor` in the next steps, before clipping and the
  /// update (uneven inputs: the ranks that had a batch, not the world, make the mean).
  void set_gradient_scale(double factor) { gradient_scale_ = factor; }

  const DataParallelStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 protected:
  /// Around the optimizer step: ZeRO and FSDP finish reducing gradients to the shard owners
  /// before it, ZeRO all-gathers the updated shards after it. Replicas have nothing to do.
  virtual void before_step() {}
  virtual void after_step() {}
  /// The squared gradient norm over all ranks, given this rank's part of it: replicated
  /// gradients are the same on every rank (`local` is the answer); shard owners add theirs up.
  virtual double global_norm_squared(double local) { return local; }

  /// Runs `hook(params_[i])` after parameter i's gradient is complete in each backward, for as
  /// long as this strategy lives (autograd/hooks.h); other hooks on it are left alone. Nothing
  /// for a frozen parameter (requires_grad false), which never gets a gradient.
  void add_gradient_hook(std::size_t i, std::function<void(Tensor&)> hook);
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
  DataParallelStats stats_;
  NormScope norm_scope_;
  double gradient_scale_ = 1;

  // Checkpoints (training_state.cc, which defines these defaults for replicas): the full value
  // of parameter i / of optimizer state `name` of parameter i (collective for sharded
  // strategies), and their inverse.
  virtual Tensor full_parameter(std::size_t i);
  virtual Tensor full_optimizer_state(std::size_t i, const std::string& name);
  virtual void load_parameter(std::size_t i, const Tensor& full);
  virtual void load_optimizer_state(std::size_t i, const std::string& name, const Tensor& full);
  /// Collective: adds to `state` (rank 0's full state dict; empty elsewhere) the parameters and
  /// optimizer state that other ranks hold and rank 0 does not, under one process's names
  /// (expert parallelism's experts). Replicas and shards have none.
  virtual void gather_rank_local_state(StateDict& /*state*/) {}
  friend StateDict full_state_dict(DataParallel& dp);
  friend void load_full_state_dict(DataParallel& dp, const StateDict& state);
  friend MemoryUse memory_use(const DataParallel& dp);

 private:
  std::vector<autograd::RemovableHandle> gradient_hooks_;
};

}  // namespace ringgrad::nn::parallel
