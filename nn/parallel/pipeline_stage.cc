// PipelineStage: the GPT's modules of one stage, copied under their own names, and the part of
// GPT::forward that runs there.
#include "nn/parallel/pipeline_stage.h"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "autograd/linear.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {

PipelineStage::PipelineStage(const GPT& full, int stage, int stages)
    : config_(full.config()), stage_(stage), stages_(stages) {
  const std::int64_t layers = config_.n_layer;
  if (stages < 1 || stage < 0 || stage >= stages || layers % stages != 0)
    throw std::invalid_argument(fmt::format("PipelineStage {} of {}: n_layer {} does not divide into {} stages", stage,
                                            stages, layers, stages));
  if (!config_.tie_weights) throw std::invalid_argument("PipelineStage: needs tie_weights (the head is wte)");
  // A stage's modules are new ones of the same shapes, then given the whole model's values.
  // Making them draws initial weights; the generator is put back, so this stage's copy does not
  // change what the program draws next.
  const Generator saved = default_generator();
  const GPTConfig& c = config_;
  if (is_first() || is_last()) wte = register_module("wte", std::make_shared<Embedding>(c.vocab_size, c.n_embd, c.dtype));
  if (is_first()) wpe = register_module("wpe", std::make_shared<Embedding>(c.block_size, c.n_embd, c.dtype));
  const std::int64_t per = layers / stages;
  for (std::int64_t i = stage * per; i < (stage + 1) * per; ++i)
    h.push_back(register_module("h." + std::to_string(i), std::make_shared<Block>(c)));
  if (is_last()) ln_f = register_module("ln_f", std::make_shared<LayerNorm>(c.n_embd, c.bias, 1e-5, c.dtype));
  default_generator() = saved;
  StateDict mine;
  for (auto& [name, t] : full.named_parameters()) mine[name] = t.detach();
  load_state_dict(mine, /*strict=*/false);
}

Tensor PipelineStage::forward(const Tensor& input) {
  Tensor x = input;
  if (is_first()) {
    const Tensor pos = Tensor::arange(input.size(1)).to(input.device());
    x = dropout((*wte)(input) + (*wpe)(pos), config_.dropout, is_training());
  }
  for (auto& block : h) x = (*block)(x);
  if (!is_last()) return x;
  return linear((*ln_f)(x), wte->weight);  // [b, T, V]
}

}  // namespace ringgrad::nn::parallel
