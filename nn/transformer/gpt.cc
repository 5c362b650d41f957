// The GPT's modules in nanoGPT's order and names, GPT-2's initialisation (N(0, 0.02), residual
// projections scaled by 1/sqrt(2 n_layer)), forward from token ids to [B, T, V] logits, and
// sampling with temperature and top-k.
#include "nn/transformer/gpt.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

#include "autograd/grad_mode.h"
#include "autograd/linear.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "tensor/elementwise.h"
#include "tensor/view.h"

namespace ringgrad::nn {

GPT::GPT(const GPTConfig& config) : config_(config) {
  wte = register_module("wte", std::make_shared<Embedding>(config.vocab_size, config.n_embd, config.dtype));
  if (!config.rotary)  // with rotary embeddings the positions are in attention's q and k instead
    wpe = register_module("wpe", std::make_shared<Embedding>(config.block_size, config.n_embd, config.dtype));
  for (std::int64_t i = 0; i < config.n_layer; ++i) {
    h.push_back(register_module("h." + std::to_string(i), std::make_shared<Block>(config)));
  }
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(config.n_embd, config.bias, 1e-5, config.dtype));
  if (!config.tie_weights) {
    lm_head = register_module("lm_head", std::make_shared<Linear>(config.n_embd, config.vocab_size, false, config.dtype));
  }

  // GPT-2 initialisation. The residual projections are scaled down so that the sum of
  // 2 n_layer residual branches keeps unit variance at initialisation.
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  for (auto& [name, p] : named_parameters()) {
    const bool is_norm = name.find("ln_") != std::string::npos;
    if (is_norm) continue;  // LayerNorm keeps weight 1, bias 0
    if (name.ends_with(".bias")) {
      kernels::fill_(p, 0.0);
    } else if (name.ends_with("c_proj.weight")) {
      kernels::normal_(p, 0.0, residual_std);
    } else {
      kernels::normal_(p, 0.0, 0.02);
    }
  }
}

Tensor GPT::forward(const Tensor& idx) {
  if (idx.dim() != 2 || idx.size(1) > config_.block_size) {
    throw std::invalid_argument(fmt::format("GPT: need token ids [B, T] with T <= block_size {}, got {}",
                                            config_.block_size, shape_str(idx.shape())));
  }
  Tensor x = (*wte)(idx);  // [B, T, C]
  if (wpe) x = x + (*wpe)(Tensor::arange(idx.size(1)).to(idx.device()));  // + [T, C]
  x = dropout(x, config_.dropout, is_training());
  for (auto& block : h) x = (*block)(x);
  x = (*ln_f)(x);
  return lm_head ? (*lm_head)(x) : linear(x, wte->weight);  // [B, T, V]
}

Tensor GPT::aux_loss() const {
  Tensor total;
  for (const auto& block : h) {
    if (!block->moe) continue;
    const Tensor a = block->moe->aux_loss() * config_.moe_aux_loss_coef;
    total = total.defined() ? total + a : a;
  }
  return total;
}

std::int64_t sample_token(const float* logits, std::int64_t v, double temperature, std::int64_t top_k, Generator& gen) {
  // Keep the top_k largest logits: everything below the k-th largest gets probability 0.
  float cutoff = -std::numeric_limits<float>::infinity();
  if (top_k > 0 && top_k < v) {
    std::vector<float> sorted(logits, logits + v);
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<>());
    cutoff = sorted[static_cast<std::size_t>(top_k - 1)];
  }
  const float mx = *std::max_element(logits, logits + v);
  std::vector<float> probs(static_cast<std::size_t>(v));
  double total = 0;
  for (std::int64_t i = 0; i < v; ++i) {
    const auto p = static_cast<std::size_t>(i);
    probs[p] = logits[i] < cutoff ? 0.0f : static_cast<float>(std::exp((logits[i] - mx) / temperature));
    total += probs[p];
  }
  // Inverse-CDF sampling: the first token whose cumulative probability passes u.
  double u = gen.next_double() * total;
  for (std::int64_t i = 0; i < v; ++i) {
    u -= probs[static_cast<std::size_t>(i)];
    if (u < 0) return i;
  }
  return std::max_element(logits, logits + v) - logits;  // rounding ran u past the end
}

Tensor GPT::generate(const Tensor& idx, std::int64_t max_new_tokens, double temperature, std::int64_t top_k,
                     Generator& gen) {
  if (idx.dim() != 2 || idx.dtype() != DType::Int64 || !(temperature > 0)) {
    throw std::invalid_argument("GPT::generate: need int64 ids [B, T] and temperature > 0");
  }
  NoGradGuard no_grad;
  const bool was_training = is_training();
  eval();
  const std::int64_t batch = idx.size(0), v = config_.vocab_size;
  std::vector<std::vector<std::int64_t>> rows(static_cast<std::size_t>(batch));
  const std::vector<std::int64_t> start = idx.to_vector<std::int64_t>();
  for (std::int64_t b = 0; b < batch; ++b) {
    rows[static_cast<std::size_t>(b)].assign(start.begin() + b * idx.size(1), start.begin() + (b + 1) * idx.size(1));
  }
  for (std::int64_t step = 0; step < max_new_tokens; ++step) {
    const std::int64_t len = std::min<std::int64_t>(static_cast<std::int64_t>(rows[0].size()), config_.block_size);
    std::vector<std::int64_t> context;
    for (const auto& r : rows) context.insert(context.end(), r.end() - len, r.end());
    const Tensor logits = forward(Tensor::from_vector(context, {batch, len}).to(device()));  // [B, len, V]
    const Tensor last_logits = kernels::to_dtype(kernels::narrow(logits, 1, len - 1, 1), DType::Float32).cpu();  // [B, 1, V]
    for (std::int64_t b = 0; b < batch; ++b)
      rows[static_cast<std::size_t>(b)].push_back(sample_token(last_logits.data<float>() + b * v, v, temperature, top_k, gen));
  }
  train(was_training);
  std::vector<std::int64_t> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return Tensor::from_vector(flat, {batch, static_cast<std::int64_t>(rows[0].size())}).to(idx.device());
}

}  // namespace ringgrad::nn
