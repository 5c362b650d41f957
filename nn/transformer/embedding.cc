// Embedding: a [num_embeddings, embedding_dim] table drawn from N(0, 1) as torch.nn.Embedding
// does; forward is a row lookup (the embedding op) by int64 ids.
#include "nn/transformer/embedding.h"

#include "autograd/ops.h"
#include "tensor/random.h"

namespace ringgrad::nn {

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, DType dtype) {
  Tensor w = Tensor::zeros({num_embeddings, embedding_dim}, dtype);
  kernels::normal_(w, 0.0, 1.0);
  weight = register_parameter("weight", w);
}

Tensor Embedding::forward(const Tensor& ids) { return embedding(weight, ids); }

}  // namespace ringgrad::nn
