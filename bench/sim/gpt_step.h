// One training step of the contest's GPT on a simulated GPU cluster (collectives/sim/): each
// GPU's forward and backward as compute time at a stated FLOP rate, every byte of its
// communication simulated on the topology's links by ringgrad's own algorithms (the one the
// cost model picks for each all-reduce):
//   dp  DDP: each layer's gradients (fp32, 28 MB at C = 768: PyTorch's 25 MiB bucket) are
//       all-reduced among the dp ranks on the GPU's communication stream as soon as the last
//       micro-batch's backward has produced them, behind the rest of backward;
//   tp  Megatron-LM: per layer an all-reduce of the activations after attention and after the
//       MLP forward, and two of their gradients backward (bf16), on the critical path;
//   pp  1F1B over m micro-batches: activations forward, their gradients backward (bf16, sent
//       without waiting, received when needed), each stage's DDP after its last backward;
//   cp  ring attention: per layer cp-1 exchanges of a K, V block forward, of K, V and their
//       gradients backward, not overlapped with the attention's compute.
// Ranks are laid out dp x pp x cp x tp, tp fastest (nn/parallel/grid/process_grid.h), so a
// tensor-parallel group of up to 8 sits inside a host; pipeline stage k holds layers
// [L k / pp, L (k+1) / pp). Transfers go in ringgrad's device pieces (4 MiB). FLOPs per token
// and layer: 24 C^2 for the matrices, 4 T C for attention (counted whole, as if not causal),
// backward twice forward; the head 2 C V. The optimizer step is left out.
#pragma once

#include <string>
#include <string_view>

#include "collectives/sim/chrome_trace.h"
#include "collectives/sim/topology.h"

namespace ringgrad::bench {

/// The contest's model and batch on a cluster (docs/speedrun.md): GPT-2 small's 12 layers of
/// C = 768 over T = 1024 characters (V = 65), a global batch of B = 512 sequences.
struct GptShape {
  int n_layer = 12, n_embd = 768, block_size = 1024, vocab = 65, batch = 512;
};

/// dp x pp x cp x tp; micro_batches 0: 4 pp when pp > 1, else 1.
struct Layout {
  int dp = 1, tp = 1, pp = 1, cp = 1, micro_batches = 0;
};

/// "dp=8,tp=4" (any of dp, tp, pp, cp, m; the rest 1). Throws std::invalid_argument naming the key.
Layout parse_layout(std::string_view text);

/// Seconds of one step, on the rank that finished last: the step, its forward and backward
/// compute, its exposed communication (tensor- and context-parallel collectives, and the wait
/// for DDP's last bucket after backward), and its pipeline waits (bubble and transfers).
struct StepTimes {
  double step = 0, compute = 0, comm = 0, pipeline = 0;
};

/// One step of `shape` under `layout` on `topology` (devices = dp pp cp tp), each GPU computing
/// `flops` per second; spans to `trace` when not null. Throws std::invalid_argument when the
/// layout does not fit the devices or the shape (batch by dp x m, C by tp, T by cp, a layer a stage).
StepTimes simulate_gpt_step(collectives::sim::Topology topology, const GptShape& shape, const Layout& layout, double flops,
                            collectives::sim::ChromeTrace* trace);

/// ringgrad-sim --gpt: a table of one step per layout (";"-separated) on `topology`, at `tflops`
/// TFLOP/s per GPU (0: the default, 40% of B200's 2,250 dense bf16), and the fastest layout.
int run_gpt_steps(const std::string& layouts, const std::string& topology, double tflops, const std::string& trace);

}  // namespace ringgrad::bench
