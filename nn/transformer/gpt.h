// GPT: a decoder-only transformer language model (Radford et al. 2018, 2019), as nanoGPT
// writes it. Parameter names match nanoGPT's (wte, wpe, h.0.ln_1, h.0.attn.c_attn, ...,
// ln_f, lm_head; nanoGPT nests all but lm_head under "transformer.").
//
//   idx [B, T] int64 -> wte(idx) + wpe(0..T-1)          [B, T, C]
//     -> h.0 ... h.{n_layer-1} (Block)                  [B, T, C]
//     -> ln_f -> lm_head                                [B, T, V] logits
#pragma once

#include <memory>
#include <vector>

#include "nn/transformer/block.h"
#include "nn/transformer/config.h"
#include "nn/transformer/embedding.h"
#include "tensor/random.h"

namespace ringgrad::nn {

class GPT : public Module {
 public:
  /// Builds the model and initialises it as GPT-2: Linear and Embedding weights N(0, 0.02),
  /// biases 0, the residual projections (attn.c_proj, mlp.c_proj) N(0, 0.02 / sqrt(2 n_layer)),
  /// LayerNorm 1 and 0. Weights are drawn from the default generator (manual_seed first).
  /// Throws std::invalid_argument for a config with n_embd not divisible by n_head.
  explicit GPT(const GPTConfig& config);

  /// idx: int64 [B, T] token ids, T <= block_size, on the model's device -> logits [B, T, V]
  /// (float32). Throws std::invalid_argument when T exceeds block_size or idx is not [B, T].
  Tensor forward(const Tensor& idx) override;

  /// Continues each row of idx [B, T0] by max_new_tokens sampled tokens -> [B, T0 + n].
  /// Each step feeds the last block_size tokens, divides the last logits by `temperature`
  /// (> 0; lower is greedier), keeps the `top_k` largest (0 keeps all) and samples from
  /// their softmax with `gen` (on the CPU: only the last logits are copied from a GPU). Runs in
  /// eval mode without recording a graph; idx may be on any device, the result is on idx's.
  Tensor generate(const Tensor& idx, std::int64_t max_new_tokens, double temperature, std::int64_t top_k,
                  Generator& gen);

  /// moe_aux_loss_coef times the sum of the MoE layers' load-balancing losses of the last
  /// forward (nn/transformer/moe.h): what training adds to the cross-entropy. Undefined
  /// without experts.
  Tensor aux_loss() const;

  const GPTConfig& config() const { return config_; }
  /// Where the parameters are (Module::to moves them all together).
  Device device() const { return wte->weight.device(); }

  std::shared_ptr<Embedding> wte, wpe;
  std::vector<std::shared_ptr<Block>> h;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Linear> lm_head;  // null when tie_weights: the logits use wte.weight

 private:
  GPTConfig config_;
};

/// One token drawn from `logits` (v values of the last position) as GPT::generate draws it:
/// divided by `temperature`, the `top_k` largest kept (0 keeps all), inverse-CDF sampling of
/// their softmax with one draw of `gen`. Layouts that hold the model in pieces sample with it
/// so that their samples are one process's.
std::int64_t sample_token(const float* logits, std::int64_t v, double temperature, std::int64_t top_k, Generator& gen);

}  // namespace ringgrad::nn
