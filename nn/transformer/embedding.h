// Embedding: a learned table of vectors looked up by integer id (torch.nn.Embedding).
#pragma once

#include <cstdint>

#include "nn/module.h"

namespace ringgrad::nn {

/// weight: [num_embeddings, embedding_dim], initialised N(0, 1) as in PyTorch (GPT re-initialises).
/// forward: int64 ids of any shape [...] -> [..., embedding_dim]; an id outside
/// [0, num_embeddings) throws std::out_of_range. The gradient adds up over repeated ids.
class Embedding : public Module {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, DType dtype = DType::Float32);
  Tensor forward(const Tensor& ids) override;

  Tensor weight;
};

}  // namespace ringgrad::nn
