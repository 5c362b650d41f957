// Everything that defines a GPT training run besides the data: the model's shape and the
// optimisation recipe, with named presets. train_gpt starts from a preset and lets a flag
// override any field; train_bench times the same presets.
#pragma once

#include <cstdint>
#include <string>

#include "nn/lr_schedule.h"
#include "nn/transformer/config.h"

namespace ringgrad::nn {

struct TrainConfig {
  GPTConfig model;
  std::int64_t batch_size = 12;
  std::int64_t max_iters = 2000;
  double lr = 1e-3;                  // peak learning rate after warmup (AdamW's)
  double min_lr = 1e-4;              // end of the decay
  std::int64_t warmup_iters = 100;
  std::int64_t lr_decay_iters = 2000;
  std::string lr_schedule = "cosine";  // or "wsd": warmup, the peak held, a linear cooldown
  double cooldown_frac = 0.4;          // wsd: the share of lr_decay_iters spent cooling down
  std::string optimizer = "adamw";     // or "muon": Muon for the blocks' matrices, AdamW for the rest
  double muon_lr = 0.02;               // Muon's peak learning rate (scaled by the same schedule)
  double muon_momentum = 0.95;
  double beta1 = 0.9, beta2 = 0.99;  // AdamW
  double weight_decay = 0.1;         // on 2-D parameters only (weight_decay_groups)
  double grad_clip = 1.0;            // max global gradient norm; 0 disables clipping
  std::int64_t eval_interval = 250;
  std::int64_t eval_iters = 20;      // batches per loss estimate
  bool eval_full = false;            // at the end, the loss on every validation token (full_split_loss)
  std::int64_t log_interval = 50;
  std::uint64_t seed = 1337;

  /// The learning rate at iteration `it` under lr_schedule. Throws std::invalid_argument
  /// naming the schedules for an unknown one.
  double lr_at(std::int64_t it) const;
};

/// "baby": nanoGPT's small CPU recipe for Tiny Shakespeare (4 layers, 4 heads, C 128, T 64,
/// B 12, 2000 iters, lr 1e-3 -> 1e-4 after 100 warmup iters, no dropout), with biases and an
/// untied lm_head as in the PyTorch twin it is compared with.
/// "shakespeare-char": nanoGPT's GPU recipe for the same text (6 layers, 6 heads, C 384, T 256,
/// B 64, dropout 0.2, 5000 iters, lr 1e-3 -> 1e-4 after 100 warmup iters, betas (0.9, 0.99),
/// weight decay 0.1, evaluation every 250 iters on 200 batches), without biases and with
/// lm_head tied to wte as nanoGPT builds it: 10.75M parameters (10.65M without wpe, the count
/// nanoGPT prints).
/// "speedrun": the fixed-time contest's recipe (docs/speedrun.md), the baby shape with rotary
/// embeddings (no wpe), Muon on the blocks' matrices beside AdamW, and a global batch of 48;
/// every choice measured within 300 s on 2 ranks over 3 seeds, the rest (cosine, GELU, no
/// QK-norm, 4 layers) kept because its alternative did not pay there or was not combined.
/// "tiny": a seconds-long smoke run (2 layers, C 32, T 32, 200 iters).
/// Throws std::invalid_argument naming the known presets for any other name.
TrainConfig train_preset(const std::string& name);

/// Every field of `c` (the model's shape and options, and the recipe) as one JSON object, with
/// train_gpt's flag names as keys: what `train_gpt --print_config` prints, so a twin in another
/// framework trains exactly the same run.
std::string train_config_json(const TrainConfig& c);

}  // namespace ringgrad::nn
