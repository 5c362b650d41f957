// Vocabulary-parallel cross-entropy (three all-reduces of N values, the gradient local) and
// embedding (a masked lookup, then reduce_from_group).
#include "nn/parallel/model_parallel/vocab_parallel.h"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "nn/parallel/model_parallel/tensor_parallel_ops.h"
#include "nn/parallel/tensor_buffer.h"
#include "tensor/elementwise.h"
#include "tensor/index.h"
#include "tensor/reduce.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

namespace k = kernels;
using collectives::Communicator;
using collectives::ReduceOp;

// Which of `ids` this rank holds: local row (0 where not held) and 1 / 0.
struct Owned {
  Tensor rows;  // int64, ids' shape
  Tensor mask;  // logits' dtype, ids' shape
};

Owned owned(const Tensor& ids, std::int64_t rows_here, std::int64_t vocab, Communicator& group, DType dtype,
            Device device, const char* op) {
  const std::int64_t start = group.rank() * rows_here;
  const std::vector<std::int64_t> all = ids.cpu().to_vector<std::int64_t>();
  std::vector<std::int64_t> rows(all.size(), 0);
  std::vector<double> mask(all.size(), 0.0);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] < 0 || all[i] >= vocab)
      throw std::out_of_range(fmt::format("{} on rank {}: id {} at position {} is outside the vocabulary [0, {})", op,
                                          group.rank(), all[i], i, vocab));
    if (all[i] >= start && all[i] < start + rows_here) {
      rows[i] = all[i] - start;
      mask[i] = 1.0;
    }
  }
  return {Tensor::from_vector(rows, ids.shape()).to(device),
          k::to_dtype(Tensor::from_vector(mask, ids.shape()), dtype).to(device)};
}

void all_reduce(Tensor& t, ReduceOp op, Communicator& group) { group.all_reduce(synced_buffer(t), synced_buffer(t), op); }

// 1 for this rank's columns below vocab_size, 0 for padding: [1, here].
Tensor real_columns(std::int64_t here, std::int64_t vocab_size, const Communicator& group, DType dtype, Device device) {
  std::vector<double> mask(static_cast<std::size_t>(here));
  for (std::int64_t c = 0; c < here; ++c) mask[static_cast<std::size_t>(c)] = group.rank() * here + c < vocab_size ? 1.0 : 0.0;
  return k::to_dtype(Tensor::from_vector(mask, {1, here}), dtype).to(device);
}

}  // namespace

Tensor pad_vocab(const Tensor& weight, std::int64_t multiple) {
  const std::int64_t v = weight.size(0), padded = (v + multiple - 1) / multiple * multiple;
  Tensor out = Tensor::zeros({padded, weight.size(1)}, weight.dtype(), weight.device());
  k::copy_(k::narrow(out, 0, 0, v), weight.detach());
  return out;
}

Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, Communicator& group,
                                    std::int64_t vocab_size) {
  const std::int64_t n = logits.size(0), here = logits.size(1);
  if (vocab_size == 0) vocab_size = here * group.world_size();
  const Owned target = owned(targets, here, vocab_size, group, logits.dtype(), logits.device(),
                             "vocab_parallel_cross_entropy");
  const Tensor x = logits.detach();
  // The max is only a shift (any value gives the same loss): padding may take part in it.
  Tensor max = k::gather(x, 1, k::argmax(x, 1, /*keepdim=*/true));  // [N, 1]
  all_reduce(max, ReduceOp::MAX, group);
  Tensor e = k::exp(k::sub(x, max));
  if (vocab_size < here * group.world_size())
    e = k::mul(e, real_columns(here, vocab_size, group, x.dtype(), x.device()));
  Tensor sum = k::sum(e, {1}, /*keepdim=*/true);
  all_reduce(sum, ReduceOp::SUM, group);
  const Tensor index = k::reshape(target.rows, {n, 1}), mask = k::reshape(target.mask, {n, 1});
  Tensor picked = k::mul(k::sub(k::gather(x, 1, index), max), mask);  // l_t - m on its owner, else 0
  all_reduce(picked, ReduceOp::SUM, group);
  const Tensor loss = k::mean(k::sub(k::log(sum), picked));
  return autograd::record("vocab_parallel_cross_entropy", loss, {logits},
                          [e, sum, index, mask, n](const Tensor& g) -> std::vector<Tensor> {
                            Tensor grad = k::div(e, sum);  // softmax over the whole vocabulary, this slice
                            Tensor one_hot = Tensor::zeros(grad.shape(), grad.dtype(), grad.device());
                            k::scatter_add_(one_hot, 1, index, mask);
                            return {k::mul(k::sub(grad, one_hot), g.cpu().item<double>() / static_cast<double>(n))};
                          });
}

VocabParallelEmbedding::VocabParallelEmbedding(const Tensor& full_weight, Communicator& group) : group_(group) {
  const std::int64_t v = full_weight.size(0), p = group.world_size();
  if (v % p != 0)
    throw std::invalid_argument(fmt::format("VocabParallelEmbedding on rank {}: a vocabulary of {} does not divide into "
                                            "{} tensor-parallel ranks (pad it to a multiple of {})", group.rank(), v, p, p));
  weight = register_parameter("weight", k::clone(k::narrow(full_weight.detach(), 0, group.rank() * (v / p), v / p)));
}

Tensor VocabParallelEmbedding::forward(const Tensor& ids) {
  const Owned mine = owned(ids, weight.size(0), weight.size(0) * group_.world_size(), group_, weight.dtype(),
                           weight.device(), "VocabParallelEmbedding");
  const Tensor partial = embedding(weight, mine.rows) * unsqueeze(mine.mask, -1);
  return sequence_parallel ? reduce_scatter_sequence(partial, group_) : reduce_from_group(partial, group_);
}

}  // namespace ringgrad::nn::parallel
