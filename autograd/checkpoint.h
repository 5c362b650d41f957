// Activation recomputation (torch.utils.checkpoint): run a region of the forward pass without
// keeping its intermediate activations, and recompute them when backward reaches the region.
// Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost", checkpoint every block;
// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// recompute only the attention core, whose [B, H, T, T] scores grow with T^2 but cost few FLOPs.
//
// Cost: one extra forward of the region per backward (about a third more compute when the
// whole model is checkpointed: forward 1 + backward 2 becomes 1 + 1 + 2). Memory: the region's
// inputs instead of every tensor its ops save for backward; during backward one region's
// activations at a time are alive again.
#pragma once

#include <functional>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad {

/// A region of the forward pass: its inputs -> one output. It may read parameters (captured
/// modules) besides the inputs; it must compute the same thing each time it is called with the
/// same inputs and the same random state (dropout draws from the default generator).
using Region = std::function<Tensor(const std::vector<Tensor>& inputs)>;

/// Runs region(inputs) without recording its graph and records one node in its place that keeps
/// only `inputs` (and the default generator's state). When backward reaches that node it sets
/// the default generator back to that state, runs region again with the graph recorded, on
/// inputs that are fresh leaves, and runs backward() through it from the incoming gradient:
/// the parameters read inside the region accumulate their gradients as without checkpointing
/// (the same ops, the same values, summed into grad()), and the leaves' gradients go on to the
/// nodes before the region. Dropout masks replay identically; the generator is left where the
/// forward left it. A parameter read both inside and outside the region (or in two regions) has
/// its gradient accumulated once per pass, not summed first: its post-accumulate-grad hooks fire
/// for each, and three or more parts may round in another order. With grad mode off, or no
/// input requiring grad, region(inputs) simply runs (recorded as usual, so parameters inside
/// still get gradients: PyTorch's re-entrant variant would lose them).
Tensor checkpoint(const Region& region, const std::vector<Tensor>& inputs);

}  // namespace ringgrad
