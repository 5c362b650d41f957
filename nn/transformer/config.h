// The hyperparameters that define a GPT's shape (nanoGPT's GPTConfig). Letters used in every
// shape comment of nn/transformer: B batch, T time (<= block_size), C channels (n_embd),
// V vocab (vocab_size), H heads (n_head), hs = C / H head size.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/dtype.h"

namespace ringgrad::nn {

/// What a training forward keeps for backward (autograd/checkpoint.h): every activation (None),
/// only each block's input, its forward replayed during backward (Blocks, Chen et al. 2016), or
/// everything but the attention core's [B, H, T, T] probabilities, recomputed from q, k and v
/// (Attention, Korthikanti et al. 2022's selective recomputation). The values computed are the
/// same bit for bit; only memory and time differ.
enum class Recompute { None, Blocks, Attention };
/// Each mode by the name train_gpt's and train_bench's --recompute take.
inline const std::map<std::string, Recompute> kRecomputeNames = {
    {"none", Recompute::None}, {"blocks", Recompute::Blocks}, {"attention", Recompute::Attention}};

struct GPTConfig {
  std::int64_t n_layer = 4;
  std::int64_t n_head = 4;
  std::int64_t n_embd = 128;
  std::int64_t block_size = 64;  // longest context T
  std::int64_t vocab_size = 65;
  double dropout = 0.0;          // on embeddings, attention output and MLP output
  bool bias = true;              // biases in Linear layers and LayerNorms
  bool tie_weights = true;       // lm_head shares wte's [V, C] matrix (Press & Wolf 2017)
  bool rotary = false;           // rotary position embeddings on q and k (tensor/rotary.h) instead of wpe
  bool qk_norm = false;          // each head's q and k scaled to unit RMS before attention (tensor/qk_norm.h)
  bool relu_squared = false;     // MLP activation max(x, 0)^2 instead of GELU (So et al. 2021, "Primer")
  // Mixture of experts (nn/transformer/moe.h): with moe_experts E > 0 every block's MLP is E
  // expert MLPs behind a top-k router (Megatron's --num_experts, --moe_router_topk,
  // --moe_expert_capacity_factor, --moe_aux_loss_coeff).
  std::int64_t moe_experts = 0;
  std::int64_t moe_top_k = 2;
  double moe_capacity_factor = 1.25;
  double moe_aux_loss_coef = 0.01;
  DType dtype = DType::Float32;  // of the parameters (and so the activations); Float64 for exact checks
  Recompute recompute = Recompute::None;  // not in checkpoints: a run may resume with another

  /// The choices above that change what the model computes but no parameter's name or shape, as
  /// name and value: a checkpoint records them and a resume must match them.
  std::vector<std::pair<std::string, bool>> computation_flags() const {
    return {{"rotary", rotary}, {"qk_norm", qk_norm}, {"relu_squared", relu_squared}};
  }
};

}  // namespace ringgrad::nn
