// Activation recomputation in the GPT (config.recompute, autograd/checkpoint.h): with blocks or
// the attention core recomputed, every parameter's gradient and the loss are bit for bit those
// of the model that keeps its activations, step after step of AdamW, in float32 and float64,
// with dropout on; and what a forward leaves alive for backward is what each mode promises.
#include <catch2/catch.hpp>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/transformer/gpt.h"
#include "nn/transformer/train_step.h"
#include "tensor/block_cache.h"
#include "tensor/random.h"
#include "tensor/storage.h"

using namespace ringgrad;
using namespace ringgrad::nn;

namespace {

GPTConfig small_config(DType dtype, Recompute recompute) {
  GPTConfig c;
  c.n_layer = 3, c.n_head = 2, c.n_embd = 16, c.block_size = 8, c.vocab_size = 11;
  c.dropout = 0.1;  // so the replayed forward must draw the forward's masks
  c.dtype = dtype, c.recompute = recompute;
  return c;
}

Tensor random_ids(std::int64_t b, std::int64_t t, std::int64_t vocab, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(b * t));
  for (auto& id : ids) id = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(vocab)));
  return Tensor::from_vector(ids, {b, t});
}

// k steps of forward, backward and AdamW from the same seed: each step's loss and every
// parameter's gradient, then the parameters after the last step.
struct Trajectory {
  std::vector<std::vector<double>> losses, grads, params;
};

Trajectory train(const GPTConfig& c, int steps) {
  manual_seed(3);
  GPT model(c);
  AdamW opt(weight_decay_groups(model, 0.1), {1e-2, 0.9, 0.99, 1e-8});
  Trajectory out;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    const Tensor loss = cross_entropy(model(random_ids(4, 8, 11, 10 + static_cast<std::uint64_t>(step))),
                                      random_ids(4, 8, 11, 20 + static_cast<std::uint64_t>(step)));
    backward(loss);
    out.losses.push_back(loss.to_vector<double>());
    for (const Tensor& p : model.parameters()) out.grads.push_back(p.grad().to_vector<double>());
    opt.step();
  }
  for (const Tensor& p : model.parameters()) out.params.push_back(p.to_vector<double>());
  return out;
}

// Bytes a training forward of `c` on a [B, T] batch leaves alive for backward.
std::size_t kept_by_forward(const GPTConfig& c, std::int64_t batch) {
  manual_seed(3);
  GPT model(c);
  const Tensor idx = random_ids(batch, c.block_size, c.vocab_size, 1);
  const std::size_t before = host_memory_stats().in_use;
  const Tensor logits = model(idx);
  return host_memory_stats().in_use - before;
}

}  // namespace

TEST_CASE("GPT recompute blocks and attention: bit-equal gradients, losses and parameters over 3 AdamW steps") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    const Trajectory kept = train(small_config(dtype, Recompute::None), 3);
    for (const Recompute mode : {Recompute::Blocks, Recompute::Attention}) {
      INFO("dtype " << dtype_name(dtype) << ", recompute " << (mode == Recompute::Blocks ? "blocks" : "attention"));
      const Trajectory replayed = train(small_config(dtype, mode), 3);
      CHECK(replayed.losses == kept.losses);
      REQUIRE(replayed.grads.size() == kept.grads.size());
      for (std::size_t i = 0; i < kept.grads.size(); ++i) CHECK(replayed.grads[i] == kept.grads[i]);
      CHECK(replayed.params == kept.params);
    }
  }
}

TEST_CASE("GPT recompute: attention keeps every activation but the [B, H, T, T] probabilities, blocks keep less still") {
  // Float32, B 4, T 8, H 2: one block's probabilities are 4 * 2 * 8 * 8 * 4 = 2 KiB, a size the
  // host cache serves exactly.
  GPTConfig c = small_config(DType::Float32, Recompute::None);
  c.dropout = 0;
  const std::int64_t batch = 4;
  const std::size_t probabilities = static_cast<std::size_t>(batch * c.n_head * c.block_size * c.block_size) * 4;
  REQUIRE(BlockCache::round(probabilities) == probabilities);
  const std::size_t none = kept_by_forward(c, batch);
  c.recompute = Recompute::Attention;
  const std::size_t attention = kept_by_forward(c, batch);
  c.recompute = Recompute::Blocks;
  const std::size_t blocks = kept_by_forward(c, batch);
  CHECK(none - attention == static_cast<std::size_t>(c.n_layer) * probabilities);
  CHECK(blocks < attention);
}

TEST_CASE("GPT recompute: per block a forward keeps 16BTC + 4BT + BHT^2 elements, with blocks recomputed BTC") {
  // One block more, and what the forward leaves alive grows by one block's activations. Kept
  // for backward (float32, no dropout): ln_1's output and c_attn's (C + 3C), the attention
  // output (C), the residual sum h (C), ln_2's output (C), c_fc's and GELU's (4C + 4C), the
  // block's output (C); both LayerNorms' mean and 1/std (4 per token); the probabilities (H T
  // per token). Sizes chosen so that every tensor is a whole number of the cache's 512 B units.
  const std::int64_t b = 4, t = 32, c = 16, h = 2;
  GPTConfig config = small_config(DType::Float32, Recompute::None);
  config.dropout = 0, config.block_size = t, config.n_embd = c, config.n_head = h;
  auto per_block = [&](Recompute mode) {
    config.recompute = mode;
    config.n_layer = 2;
    const std::size_t two = kept_by_forward(config, b);
    config.n_layer = 3;
    return kept_by_forward(config, b) - two;
  };
  CHECK(per_block(Recompute::None) == static_cast<std::size_t>(16 * b * t * c + 4 * b * t + b * h * t * t) * 4);
  CHECK(per_block(Recompute::Attention) == static_cast<std::size_t>(16 * b * t * c + 4 * b * t) * 4);
  CHECK(per_block(Recompute::Blocks) == static_cast<std::size_t>(b * t * c) * 4);
}
