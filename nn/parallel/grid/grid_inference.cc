// The grid's forward without a graph: the pipeline's forward slots alone (no micro-batches, no
// backward), the loss on the last stage broadcast to the others, and the logits gathered there.
#include "nn/parallel/grid/grid_inference.h"

#include <utility>
#include <vector>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "nn/parallel/model_parallel/tensor_parallel_ops.h"
#include "nn/parallel/tensor_buffer.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Communicator;

constexpr uint64_t kTag = 0x9299;  // the forward's activations, in order

// Eval mode (no dropout) for the scope's lifetime, then the mode it had.
class EvalScope {
 public:
  explicit EvalScope(Module& m) : m_(m), was_training_(m.is_training()) { m_.eval(); }
  ~EvalScope() { m_.train(was_training_); }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  Module& m_;
  bool was_training_;
};

// One forward through the pipeline of ids [b, t]: returns the last stage's output (this tp
// rank's slice of the logits), undefined on the other stages. With V chunks per stage the
// activations go round the ring of stages V times.
Tensor pipeline_forward(PipelineStage& stage, Communicator& pp, const Tensor& ids) {
  const int stages = stage.stages();
  Tensor x = ids;
  for (int chunk = 0; chunk < stage.chunks(); ++chunk) {
    if (!stage.is_first_chunk(chunk)) {
      x = Tensor::empty({ids.size(0), stage.activation_length(ids.size(1)), stage.config().n_embd}, stage.config().dtype,
                        ids.device());
      pp.recv(synced_buffer(x), (stage.stage() + stages - 1) % stages, kTag);
    }
    const Tensor out = stage.forward_chunk(chunk, x);
    if (stage.is_last_chunk(chunk)) return out;
    pp.send(synced_buffer(kernels::contiguous(out)), (stage.stage() + 1) % stages, kTag);
  }
  return Tensor();
}

// `value` of the last stage on every stage, then averaged over `average` (each saw an equal part).
double share(double value, const PipelineStage& stage, Communicator& pp, std::vector<Communicator*> average) {
  const collectives::DType f64 = collectives::DType::kFloat64;
  pp.broadcast(collectives::ConstBuffer(&value, 1, f64), collectives::Buffer(&value, 1, f64), stage.stages() - 1);
  for (Communicator* group : average)
    if (group->world_size() > 1)
      group->all_reduce(collectives::ConstBuffer(&value, 1, f64), collectives::Buffer(&value, 1, f64),
                        collectives::ReduceOp::AVG);
  return value;
}

// The positions the cp split (and with sequence parallelism the tp split) needs T to divide by.
std::int64_t position_multiple(const PipelineStage& stage, GridGroups& groups) {
  return groups.cp->world_size() * (stage.sequence_parallel() ? groups.tp->world_size() : 1);
}

}  // namespace

double grid_loss(PipelineStage& stage, GridGroups& groups, const Tensor& idx, const Tensor& targets) {
  if (idx.size(1) % position_multiple(stage, groups) != 0) {
    const Tensor logits = grid_logits(stage, groups, idx);
    return share(stage.is_last() ? cross_entropy(logits, targets).item<double>() : 0.0, stage, *groups.pp, {});
  }
  NoGradGuard no_grad;
  const EvalScope eval(stage);
  const std::int64_t replicas = groups.dp->world_size(), cp = groups.cp->world_size();
  const bool split_rows = idx.size(0) % replicas == 0;
  const std::int64_t rows = split_rows ? idx.size(0) / replicas : idx.size(0);
  const std::int64_t first_row = split_rows ? groups.dp->rank() * rows : 0, t = idx.size(1) / cp;
  auto mine = [&](const Tensor& all) {
    return kernels::contiguous(kernels::narrow(kernels::narrow(all, 0, first_row, rows), 1, groups.cp->rank() * t, t));
  };
  const Tensor out = pipeline_forward(stage, *groups.pp, mine(idx));
  const double loss = stage.is_last() ? stage.loss(out, mine(targets)).item<double>() : 0.0;
  std::vector<Communicator*> average{groups.cp.get()};
  if (split_rows) average.push_back(groups.dp.get());
  return share(loss, stage, *groups.pp, std::move(average));
}

Tensor grid_logits(PipelineStage& stage, GridGroups& groups, const Tensor& idx) {
  NoGradGuard no_grad;
  const EvalScope eval(stage);
  const std::int64_t b = idx.size(0), t = idx.size(1), multiple = position_multiple(stage, groups);
  const std::int64_t padded = (t + multiple - 1) / multiple * multiple, cp = groups.cp->world_size();
  Tensor ids = idx;
  if (padded > t) {
    ids = Tensor::zeros({b, padded}, DType::Int64, idx.device());
    kernels::copy_(kernels::narrow(ids, 1, 0, t), idx);
  }
  const std::int64_t local = padded / cp;
  Tensor out = pipeline_forward(stage, *groups.pp, kernels::contiguous(kernels::narrow(ids, 1, groups.cp->rank() * local, local)));
  if (!stage.is_last()) return Tensor();
  if (stage.is_split() && groups.tp->world_size() > 1) out = gather_from_group(kernels::contiguous(out), *groups.tp);
  if (cp > 1) out = gather_sequence(kernels::contiguous(out), *groups.cp);
  return kernels::contiguous(kernels::narrow(kernels::narrow(out, 2, 0, stage.config().vocab_size), 1, 0, t));
}

}  // namespace ringgrad::nn::parallel
