// train_gpt's measurements of the model rather than of the run: the loss estimate every
// eval_interval (nanoGPT's estimate_loss), the loss on every validation token once, and a sample.
#pragma once

#include <cstdint>

#include "examples/train_gpt/run.h"

namespace ringgrad::examples {

/// Collective: the mean loss on eval_iters fixed batches of each split, printed and logged, then
/// --out saved when this run has trained since it started (a first evaluation would otherwise
/// replace the user's checkpoint with an untrained model).
void evaluate(Run& run, std::int64_t it);

/// Collective: the loss on every validation token once, printed and logged (the fixed-time
/// contest's number).
void report_full_val_loss(Run& run, std::int64_t it);

/// Collective: --sample_tokens characters after a newline, drawn from the layout's logits as one
/// process's GPT::generate draws them; rank 0 prints them.
/// Returns the exit status (0).
int sample(Run& run);

}  // namespace ringgrad::examples
