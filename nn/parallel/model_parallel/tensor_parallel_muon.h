// Muon under tensor parallelism, as Megatron-LM's and Moonlight's distributed Muon do it (Liu et
// al. 2025, "Muon is Scalable for LLM Training"): Newton-Schulz orthogonalises a whole matrix,
// and its result is not the pieces' results side by side (X X^T mixes every row), so each step
// all-gathers the update's slices of each split matrix over the tp group, orthogonalises the
// whole matrix, and keeps this rank's slice of the result. The momentum and the weight decay
// stay on the slices (element-wise).
//
// Every tp rank runs the same Newton-Schulz on the same whole matrix and gets the same result:
// p times the arithmetic of one rank, but no second exchange (orthogonalising on one rank and
// scattering the slices would add a scatter per matrix and leave the others waiting for it).
// Traffic per matrix of m x n per step: an all-gather of m n elements, each rank sending its
// m n / p. With DDP's sharded Muon around it (sharded_muon.h) only the matrix's owner among
// the data-parallel replicas gathers and orthogonalises, and every tp rank of that replica does.
#pragma once

#include "collectives/communicator.h"
#include "nn/module.h"
#include "nn/muon.h"

namespace ringgrad::nn::parallel {

/// `options` with whole and slice set for the split matrices of `model` (a TensorParallelGPT,
/// or a PipelineStage split over `tp`; shard_spec names how each is cut): whole all-gathers an
/// update over `tp` (a collective: every tp rank updates the same matrices in the same order),
/// slice cuts this rank's piece back out. With one tp rank nothing changes.
MuonOptions split_over(MuonOptions options, const Module& model, collectives::Communicator& tp);

}  // namespace ringgrad::nn::parallel
