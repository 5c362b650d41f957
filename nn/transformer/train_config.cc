// The named presets: baby (the defaults), tiny (seconds, for tests), shakespeare-char
// (nanoGPT's config/train_shakespeare_char.py) and speedrun (the fixed-time contest's recipe,
// docs/speedrun.md); any other name is an error that lists them.
#include "nn/transformer/train_config.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace ringgrad::nn {

TrainConfig train_preset(const std::string& name) {
  TrainConfig c;  // the defaults are the baby recipe
  c.model.tie_weights = false;  // as its PyTorch twin (bench/compare/torch_gpt.py) runs it
  if (name == "baby") return c;
  if (name == "tiny") {
    c.model.n_layer = 2, c.model.n_head = 2, c.model.n_embd = 32, c.model.block_size = 32;
    c.batch_size = 8, c.max_iters = 200, c.lr_decay_iters = 200, c.warmup_iters = 20;
    c.eval_interval = 100, c.eval_iters = 5, c.log_interval = 20;
    return c;
  }
  if (name == "shakespeare-char") {  // nanoGPT's config/train_shakespeare_char.py
    c.model.n_layer = 6, c.model.n_head = 6, c.model.n_embd = 384, c.model.block_size = 256, c.model.dropout = 0.2;
    c.model.bias = false, c.model.tie_weights = true;  // as nanoGPT's train.py builds it
    c.batch_size = 64, c.max_iters = 5000, c.lr_decay_iters = 5000;
    c.eval_interval = 250, c.eval_iters = 200, c.log_interval = 10;
    return c;
  }
  if (name == "speedrun") {  // docs/speedrun.md: each choice measured within 300 s on 2 ranks
    c.model.rotary = true;
    c.optimizer = "muon";
    c.batch_size = 48;  // global, 24 sequences a rank: it ended lower than 24 or 96 (docs/speedrun.md)
    return c;
  }
  throw std::invalid_argument("unknown config '" + name + "' (known: baby, shakespeare-char, speedrun, tiny)");
}

std::string train_config_json(const TrainConfig& c) {
  const GPTConfig& m = c.model;
  const nlohmann::json j = {
      {"n_layer", m.n_layer}, {"n_head", m.n_head}, {"n_embd", m.n_embd}, {"block_size", m.block_size},
      {"dropout", m.dropout}, {"bias", m.bias}, {"tie_weights", m.tie_weights}, {"rotary", m.rotary},
      {"qk_norm", m.qk_norm}, {"relu_squared", m.relu_squared}, {"num_experts", m.moe_experts},
      {"moe_router_topk", m.moe_top_k}, {"moe_expert_capacity_factor", m.moe_capacity_factor},
      {"moe_aux_loss_coeff", m.moe_aux_loss_coef}, {"batch_size", c.batch_size},
      {"max_iters", c.max_iters}, {"lr", c.lr}, {"min_lr", c.min_lr}, {"warmup_iters", c.warmup_iters},
      {"lr_decay_iters", c.lr_decay_iters}, {"lr_schedule", c.lr_schedule}, {"cooldown_frac", c.cooldown_frac},
      {"optimizer", c.optimizer}, {"muon_lr", c.muon_lr}, {"muon_momentum", c.muon_momentum}, {"beta1", c.beta1},
      {"beta2", c.beta2}, {"weight_decay", c.weight_decay}, {"grad_clip", c.grad_clip}, {"seed", c.seed}};
  return j.dump();
}

double TrainConfig::lr_at(std::int64_t it) const {
  if (lr_schedule == "cosine") return CosineSchedule{lr, min_lr, warmup_iters, lr_decay_iters}.at(it);
  if (lr_schedule == "wsd") return WsdSchedule{lr, min_lr, warmup_iters, lr_decay_iters, cooldown_frac}.at(it);
  throw std::invalid_argument("unknown lr_schedule '" + lr_schedule + "' (known: cosine, wsd)");
}

}  // namespace ringgrad::nn
