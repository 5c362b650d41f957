// Megatron-LM's two halves of a Linear (Shoeybi et al. 2019). For y = x W^T + b with
// W: [out, in], split over the p ranks of a tensor-parallel group:
//
//   ColumnParallelLinear: rank q holds rows [q out/p, (q+1) out/p) of W and of b, and computes
//     that slice of y from the whole x. Starts with copy_to_group (the input's gradient is summed).
//   RowParallelLinear: rank q holds columns [q in/p, (q+1) in/p) of W, takes that slice of x,
//     and computes a partial y; reduce_from_group sums the partials, then b (whole on every
//     rank) is added once.
//
// An MLP is column then row: the slice of the hidden layer a column layer leaves on each rank
// is exactly the input its row layer wants, so the block costs one all-reduce forward and one
// backward. Each layer is made from the whole Linear one process would have (same seed, same
// draws), so a tensor-parallel model starts where the single-process one does.
#pragma once

#include <cstdint>

#include "collectives/communicator.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace ringgrad::nn::parallel {

/// Rank `rank`'s slice of each of `parts` equal blocks of `t` along `dim`, back to back, as a
/// tensor of its own: what rank `rank` of `p` holds of a column-parallel (dim 0) or
/// row-parallel (dim 1) weight. The size along dim must divide by parts x p.
Tensor shard_along(const Tensor& t, std::int64_t dim, int rank, int p, int parts = 1);

class ColumnParallelLinear : public Module {
 public:
  /// Keeps this rank's rows of `full`. With gather_output the forward all-gathers the slices
  /// into the whole y on every rank. `parts` > 1 splits each of that many equal blocks of rows
  /// (attention's q, k and v) and keeps this rank's slice of every block, in order, so the
  /// local output is [q | k | v] of this rank's heads (gather_output needs parts = 1). Throws
  /// std::invalid_argument when out_features / parts does not divide by the group size, naming both.
  ColumnParallelLinear(const Linear& full, collectives::Communicator& group, bool gather_output = false, int parts = 1);
  /// As one process's Linear(in, out, bias, dtype) would be drawn, then split.
  ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features, collectives::Communicator& group,
                       bool with_bias = true, bool gather_output = false, DType dtype = DType::Float32);
  /// x: [..., in] (whole, the same on every rank) -> [..., out/p] (or [..., out] gathered).
  Tensor forward(const Tensor& x) override;

  Tensor weight;  // [out/p, in]: rows [q out/p, (q+1) out/p) of the whole (with parts: of each part)
  Tensor bias;    // [out/p], undefined without bias
  /// Sequence parallelism: x is [B, T/p, in] on each rank, all-gathered along T (backward:
  /// reduce-scattered) where it is otherwise copied.
  bool sequence_parallel = false;

 private:
  collectives::Communicator& group_;
  bool gather_output_;
};

class RowParallelLinear : public Module {
 public:
  /// Keeps this rank's columns of `full` and all of its bias. With input_is_parallel false
  /// the forward first takes this rank's slice of a whole x. Throws std::invalid_argument when
  /// in_features does not divide by the group size, naming both.
  RowParallelLinear(const Linear& full, collectives::Communicator& group, bool input_is_parallel = true);
  RowParallelLinear(std::int64_t in_features, std::int64_t out_features, collectives::Communicator& group,
                    bool with_bias = true, bool input_is_parallel = true, DType dtype = DType::Float32);
  /// x: [..., in/p] (or [..., in] whole) -> [..., out], the same on every rank.
  Tensor forward(const Tensor& x) override;

  Tensor weight;  // [out, in/p]
  Tensor bias;    // [out], whole; undefined without bias
  /// Sequence parallelism: the partial outputs are reduce-scattered along T (each rank keeps
  /// [B, T/p, out]) where they are otherwise all-reduced; bias's gradient is then partial.
  bool sequence_parallel = false;

 private:
  collectives::Communicator& group_;
  bool input_is_parallel_;
};

}  // namespace ringgrad::nn::parallel
