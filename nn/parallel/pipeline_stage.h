// One stage of a GPT cut into pipeline stages (GPipe, Huang et al. 2019): stage s of S holds
// blocks [s L/S, (s+1) L/S), the first also the embeddings (wte, wpe), the last also ln_f and
// the head. The head is tied to wte, so with S > 1 the first and the last stage each hold a
// copy of wte and sum their gradients after backward (Megatron's embedding group), which keeps
// the two copies equal. Parameter names are the GPT's.
//
//   first:  idx [b, T] int64          -> [b, T, C]
//   middle: [b, T, C]                 -> [b, T, C]
//   last:   [b, T, C] (or idx if S=1) -> logits [b, T, V]
#pragma once

#include <memory>
#include <vector>

#include "nn/transformer/gpt.h"

namespace ringgrad::nn::parallel {

class PipelineStage : public Module {
 public:
  /// Copies stage `stage` of `stages` out of `full` (tied weights). Throws
  /// std::invalid_argument when n_layer does not divide by stages, naming both.
  PipelineStage(const GPT& full, int stage, int stages);
  Tensor forward(const Tensor& x) override;

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ == stages_ - 1; }
  const GPTConfig& config() const { return config_; }

  std::shared_ptr<Embedding> wte, wpe;  // first stage; wte also on the last
  std::vector<std::shared_ptr<Block>> h;
  std::shared_ptr<LayerNorm> ln_f;       // last stage

 private:
  GPTConfig config_;
  int stage_, stages_;
};

}  // namespace ringgrad::nn::parallel
