// The communication of Megatron-LM's tensor parallelism (Shoeybi et al. 2019, section 3) as
// autograd ops over a tensor-parallel group. The conjugate pair:
//
//   copy_to_group      (Megatron's f): forward identity,           backward all-reduce (sum)
//   reduce_from_group  (Megatron's g): forward all-reduce (sum),   backward identity
//
// A column-parallel layer starts with f: every rank needs the whole input, and each computes
// only a part of the input's gradient, so the parts are summed in backward. A row-parallel
// layer ends with g: each rank holds a partial sum of the output; its gradient is already
// whole. And for a layer whose output (or input) is wanted whole on every rank:
//
//   gather_from_group:  forward all-gather along the last dim,   backward this rank's slice
//   scatter_to_group:   forward this rank's slice of the last dim, backward all-gather
//
// Sequence parallelism (Korthikanti et al. 2022) keeps the stream between the layers cut along
// the sequence, [B, T/p, C] per rank, and trades each all-reduce for its two halves:
//
//   gather_sequence:          forward all-gather along T,      backward reduce-scatter along T
//   reduce_scatter_sequence:  forward reduce-scatter along T,  backward all-gather along T
//
// (an all-reduce is a reduce-scatter then an all-gather: the same bytes, with the LayerNorms
// and dropouts in between running on T/p of the sequence each).
// Every rank of the group calls each op, in the same order (they are collectives), forward and
// backward. The group must outlive the backward pass. Float32 or float64, CPU or CUDA (a
// group communicator: host tensors only).
#pragma once

#include "collectives/communicator.h"
#include "tensor/tensor.h"

namespace ringgrad::nn::parallel {

/// y = x; dx = sum over the group of dy. Any shape.
Tensor copy_to_group(const Tensor& x, collectives::Communicator& group);
/// y = sum over the group of x; dx = dy. Any shape (the same on every rank).
Tensor reduce_from_group(const Tensor& x, collectives::Communicator& group);
/// [..., n] on each rank -> [..., n * p], rank q's block at columns [q n, (q+1) n).
Tensor gather_from_group(const Tensor& x, collectives::Communicator& group);
/// [..., n * p] -> this rank's [..., n]. Throws std::invalid_argument when the last dim does
/// not divide by the group size, naming both.
Tensor scatter_to_group(const Tensor& x, collectives::Communicator& group);
/// [B, T/p, ...] on each rank -> [B, T, ...], rank q's rows at positions [q T/p, (q+1) T/p).
Tensor gather_sequence(const Tensor& x, collectives::Communicator& group);
/// [B, T, ...] (a partial sum on each rank) -> this rank's rows of the sum, [B, T/p, ...].
/// Throws std::invalid_argument when T does not divide by the group size, naming both.
Tensor reduce_scatter_sequence(const Tensor& x, collectives::Communicator& group);

}  // namespace ringgrad::nn::parallel
