// CausalSelfAttention: c_attn makes [B, T, 3C] in one GEMM (with QK-norm its q and k scaled to
// unit RMS per head, then with rotary embeddings rotated by position), the fused causal attention op reads q, k and v from it per head, and
// c_proj maps the heads back to C, with dropout after. Under selective recomputation the
// attention op is checkpointed alone: its [B, H, T, T] probabilities are the memory that grows
// with T^2, and recomputing them costs only the attention's own forward.
#include "nn/transformer/attention.h"

#include <fmt/format.h>

#include <stdexcept>

#include "autograd/checkpoint.h"
#include "autograd/transformer_ops.h"

namespace ringgrad::nn {

CausalSelfAttention::CausalSelfAttention(const GPTConfig& config)
    : n_head_(config.n_head), dropout_(config.dropout), rotary_(config.rotary), qk_norm_(config.qk_norm),
      recompute_(config.recompute == Recompute::Attention) {
  if (config.n_head < 1 || config.n_embd % config.n_head != 0) {
    throw std::invalid_argument(fmt::format("CausalSelfAttention: n_embd {} is not divisible by n_head {}",
                                            config.n_embd, config.n_head));
  }
  c_attn = register_module("c_attn", std::make_shared<Linear>(config.n_embd, 3 * config.n_embd, config.bias, config.dtype));
  c_proj = register_module("c_proj", std::make_shared<Linear>(config.n_embd, config.n_embd, config.bias, config.dtype));
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  Tensor qkv = (*c_attn)(x);  // [B, T, 3C]
  if (qk_norm_) qkv = qk_norm(qkv, n_head_);
  if (rotary_) qkv = rotary_qk(qkv, n_head_);
  const Tensor y = recompute_ ? checkpoint([this](const std::vector<Tensor>& in) {
    return causal_self_attention(in[0], n_head_);
  }, {qkv}) : causal_self_attention(qkv, n_head_);  // -> [B, T, C]
  return dropout((*c_proj)(y), dropout_, is_training());
}

}  // namespace ringgrad::nn
