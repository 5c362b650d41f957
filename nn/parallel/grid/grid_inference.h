// Evaluation and sampling on the dp x pp x cp x tp grid (grid_training.h): one forward of the
// pipeline without a graph, in eval mode. The first stage embeds the ids, each stage sends its
// [b, t, C] output to the next, and the last stage holds the logits, each tp rank its slice of
// the vocabulary:
//
//   grid_loss    the loss as training computes it: replica d's rows, cp rank k's positions,
//                TP's vocabulary-parallel cross-entropy on the last stage (the [b, t, V] logits
//                never gathered), broadcast over the pipeline, averaged over cp and dp
//   grid_logits  the whole logits [B, T, V] on the last stage (the tp slices and the cp
//                positions gathered): what sampling needs, one position of it per token
#pragma once

#include "nn/parallel/grid/grid_training.h"
#include "tensor/tensor.h"

namespace ringgrad::nn::parallel {

/// The mean cross-entropy of idx/targets [B, T] (the same on every rank of the grid) under the
/// model whose stage `stage` this rank holds, in eval mode without a graph; the same value on
/// every rank. Every rank calls it. Rows are split over the dp replicas when they divide B (else
/// each replica computes them all); a T the context-parallel split cannot cut (the shorter last
/// window of a whole split) goes through grid_logits.
double grid_loss(PipelineStage& stage, GridGroups& groups, const Tensor& idx, const Tensor& targets);

/// The logits [B, T, V] (float, whole) of idx [B, T] (the same on every rank) on the ranks of
/// the last pipeline stage, undefined on the others; in eval mode without a graph. Every rank
/// calls it. T is padded on the right to what the cp (and sp) split needs: attention is causal,
/// so the padding changes none of the first T positions.
Tensor grid_logits(PipelineStage& stage, GridGroups& groups, const Tensor& idx);

}  // namespace ringgrad::nn::parallel
