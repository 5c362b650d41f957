// Tensor parallelism changes who computes what, not the result: with real processes, in
// float64, a column-then-row MLP on TP = 2 and 3 ranks has the loss and (sliced) parameters of
// one process after every AdamW step; vocabulary-parallel cross-entropy and embedding equal
// the whole ones in value and gradient, also inside two groups of a split world; sizes that do
// not divide are refused on every rank, naming the numbers. Tolerance: 1e-12 absolute; with
// activations recomputed the same TP training bit for bit.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn/transformer/gpt.h"
#include "nn/transformer/train_step.h"
#include "nn/parallel/model_parallel/tensor_parallel_gpt.h"
#include "nn/parallel/model_parallel/tensor_parallel_linear.h"
#include "nn/parallel/model_parallel/vocab_parallel.h"
#include "tests/parallel/model_parallel_support.h"
#include "tests/support/multiprocess.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::nn;
using namespace ringgrad::nn::parallel;
using ringgrad::collectives::Communicator;
using ringgrad::test::check;
using ringgrad::test::describe;
using ringgrad::test::run_ranks;
using ringgrad::test::expected_piece;
using ringgrad::test::max_abs_diff;
using ringgrad::test::slice;

namespace {

constexpr double kTol = 1e-12;

void require_ok(const std::vector<ringgrad::test::RankResult>& results) {
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

Tensor random(const Shape& shape, std::uint64_t seed) {
  manual_seed(seed);
  Tensor t = Tensor::zeros(shape, DType::Float64);
  kernels::uniform_(t, -1.0, 1.0);
  return t;
}

std::vector<ParamGroup> groups_of(const std::vector<Tensor>& params) {
  std::vector<ParamGroup> groups{{{}, 0.1}, {{}, 0.0}};  // decay matrices, not biases
  for (const Tensor& p : params) groups[p.dim() == 2 ? 0 : 1].params.push_back(p);
  return groups;
}

void mlp_equals_one_process(int tp) {
  require_ok(run_ranks(tp, [](const transport::Config& config) {
    Communicator group(config, collectives::CommOptions{});
    manual_seed(7);
    // A replicated layer in front, as a LayerNorm is in a transformer: its gradient needs the
    // column layer's input gradient summed over the group (copy_to_group's backward).
    Linear pre(6, 6, true, DType::Float64), up(6, 12, true, DType::Float64), down(12, 6, true, DType::Float64);
    Linear pre_tp(6, 6, true, DType::Float64);
    kernels::copy_(pre_tp.weight, pre.weight);
    kernels::copy_(pre_tp.bias, pre.bias);
    ColumnParallelLinear up_tp(up, group);
    RowParallelLinear down_tp(down, group);
    AdamW serial(groups_of({pre.weight, pre.bias, up.weight, up.bias, down.weight, down.bias}), AdamOptions{0.05, 0.9, 0.99, 1e-8});
    AdamW sharded(groups_of({pre_tp.weight, pre_tp.bias, up_tp.weight, up_tp.bias, down_tp.weight, down_tp.bias}),
                  AdamOptions{0.05, 0.9, 0.99, 1e-8});
    for (int step = 0; step < 4; ++step) {
      const Tensor x = random({5, 6}, 100 + static_cast<std::uint64_t>(step)), target = random({5, 6}, 200 + static_cast<std::uint64_t>(step));
      const Tensor d1 = down(gelu(up(tanh(pre(x))))) - target, d2 = down_tp(gelu(up_tp(tanh(pre_tp(x))))) - target;
      const Tensor loss1 = mean(d1 * d1), loss2 = mean(d2 * d2);
      check(std::abs(loss1.item<double>() - loss2.item<double>()) < kTol,
            fmt::format("rank {} step {}: loss {} vs one process {}", group.rank(), step, loss2.item<double>(), loss1.item<double>()));
      serial.zero_grad();
      sharded.zero_grad();
      backward(loss1);
      backward(loss2);
      serial.step();
      sharded.step();
    }
    const double worst = std::max({max_abs_diff(pre_tp.weight, pre.weight), max_abs_diff(pre_tp.bias, pre.bias),
                                   max_abs_diff(up_tp.weight, slice(up.weight, 0, group)),
                                   max_abs_diff(up_tp.bias, slice(up.bias, 0, group)),
                                   max_abs_diff(down_tp.weight, slice(down.weight, 1, group)),
                                   max_abs_diff(down_tp.bias, down.bias)});
    check(worst < kTol, fmt::format("rank {}: parameters differ from one process's by {}", group.rank(), worst));
  }));
}

// Cross-entropy and embedding over `group` against the whole ones; `seed` differs per group.
void vocab_ops_equal_whole(Communicator& group, std::uint64_t seed) {
  constexpr std::int64_t n = 7, vocab = 12, channels = 5;
  const Tensor whole_logits = random({n, vocab}, seed).set_requires_grad(true);
  std::vector<std::int64_t> ids;
  for (std::int64_t i = 0; i < n; ++i) ids.push_back((i * 5 + static_cast<std::int64_t>(seed)) % vocab);
  const Tensor targets = Tensor::from_vector(ids, {n});
  Tensor local = kernels::clone(slice(whole_logits, 1, group)).set_requires_grad(true);
  const Tensor loss = cross_entropy(whole_logits, targets), loss_tp = vocab_parallel_cross_entropy(local, targets, group);
  backward(loss);
  backward(loss_tp);
  check(std::abs(loss.item<double>() - loss_tp.item<double>()) < kTol,
        fmt::format("rank {}: cross-entropy {} vs whole {}", group.rank(), loss_tp.item<double>(), loss.item<double>()));
  check(max_abs_diff(local.grad(), slice(whole_logits.grad(), 1, group)) < kTol, "cross-entropy gradient");

  Tensor table = random({vocab, channels}, seed + 1).set_requires_grad(true);
  VocabParallelEmbedding embed(table, group);
  const Tensor upstream = random({n, channels}, seed + 2);
  const Tensor out = embedding(table, targets), out_tp = embed(targets);
  check(max_abs_diff(out, out_tp) < kTol, "embedding rows");
  backward(sum(out * upstream));
  backward(sum(out_tp * upstream));
  check(max_abs_diff(embed.weight.grad(), slice(table.grad(), 0, group)) < kTol, "embedding gradient");
}

void gpt_equals_one_process(int tp, bool sequence_parallel) {
  require_ok(run_ranks(tp, [&](const transport::Config& config) {
    Communicator group(config, collectives::CommOptions{});
    manual_seed(5);
    GPT whole(ringgrad::test::small_gpt(2, 6, 24, 13));  // V 13 pads to 14 on 2 ranks, 15 on 3
    TensorParallelGPT model(whole, group, sequence_parallel);
    AdamW serial(weight_decay_groups(whole, 0.1), ringgrad::test::kTestAdam);
    AdamW sharded(weight_decay_groups(model, 0.1), ringgrad::test::kTestAdam);
    Generator gen(17);
    for (int step = 0; step < 3; ++step) {
      const auto [x, y] = ringgrad::test::random_batch(gen, 2, 13);
      const double expected_loss = ringgrad::test::one_process_step(whole, serial, x, y);
      const Tensor loss2 = model.loss(x, y);
      check(std::abs(expected_loss - loss2.item<double>()) < kTol,
            fmt::format("rank {} step {}: loss {} vs one process {}", group.rank(), step, loss2.item<double>(), expected_loss));
      model.zero_grad();
      backward(loss2);
      model.all_reduce_replicated_grads();  // sequence parallel: the LayerNorms' partial gradients
      sharded.step();
    }
    std::map<std::string, Tensor> whole_params;
    for (auto& [name, t] : whole.named_parameters()) whole_params[name] = t;
    for (auto& [name, t] : model.named_parameters()) {
      const double d = max_abs_diff(t, expected_piece(name, whole_params.at(name), group));
      check(d < kTol, fmt::format("rank {}: {} differs from one process's by {}", group.rank(), name, d));
    }
  }));
}

// The TP GPT with `recompute` against the same TP GPT keeping its activations, on the same
// ranks: each step's loss and every parameter's gradient bit for bit, dropout on.
void recompute_equals_keeping(int tp, bool sequence_parallel) {
  require_ok(run_ranks(tp, [&](const transport::Config& config) {
    Communicator group(config, collectives::CommOptions{});
    auto train = [&](Recompute recompute) {
      GPTConfig c = ringgrad::test::small_gpt(2, 6, 24, 13);
      c.dropout = 0.1, c.recompute = recompute;
      manual_seed(5);
      const GPT whole(c);
      TensorParallelGPT model(whole, group, sequence_parallel);
      AdamW opt(weight_decay_groups(model, 0.1), ringgrad::test::kTestAdam);
      Generator gen(17);
      std::vector<std::vector<double>> seen;  // each step's loss, then every gradient
      for (int step = 0; step < 3; ++step) {
        const auto [x, y] = ringgrad::test::random_batch(gen, 2, 13);
        model.zero_grad();
        const Tensor loss = model.loss(x, y);
        backward(loss);
        model.all_reduce_replicated_grads();
        seen.push_back(loss.to_vector<double>());
        for (const Tensor& p : model.parameters()) seen.push_back(p.grad().to_vector<double>());
        opt.step();
      }
      return seen;
    };
    const auto kept = train(Recompute::None);
    for (const Recompute mode : {Recompute::Blocks, Recompute::Attention}) {
      const auto replayed = train(mode);
      for (std::size_t i = 0; i < kept.size(); ++i)
        check(replayed[i] == kept[i], fmt::format("rank {}: recompute {}: value {} of the steps differs", group.rank(),
                                                  mode == Recompute::Blocks ? "blocks" : "attention", i));
    }
  }));
}

}  // namespace

TEST_CASE("tensor parallel GPT with blocks or attention recomputed: bit-equal losses and gradients on TP = 2, with and without SP") {
  recompute_equals_keeping(2, false);
  recompute_equals_keeping(2, true);
}

TEST_CASE("tensor parallel GPT: TP = 2 and 3 train exactly what one process trains (3 AdamW steps, padded vocabulary)") {
  gpt_equals_one_process(2, false);
  gpt_equals_one_process(3, false);
}

TEST_CASE("sequence parallel GPT (TP = 2): T/2 positions per rank between the layers, the same training as one process") {
  gpt_equals_one_process(2, true);
}

TEST_CASE("tensor parallel MLP: TP = 2 trains exactly what one process trains (loss and parameters, 4 AdamW steps)") {
  mlp_equals_one_process(2);
}

TEST_CASE("tensor parallel MLP: TP = 3 trains exactly what one process trains (loss and parameters, 4 AdamW steps)") {
  mlp_equals_one_process(3);
}

TEST_CASE("vocabulary-parallel cross-entropy and embedding equal the whole ones on 2 and 3 ranks") {
  for (int tp : {2, 3})
    require_ok(run_ranks(tp, [](const transport::Config& config) {
      Communicator group(config, collectives::CommOptions{});
      vocab_ops_equal_whole(group, 3);
    }));
}

TEST_CASE("vocabulary-parallel ops inside two tensor-parallel groups of a split world of 4") {
  require_ok(run_ranks(4, [](const transport::Config& config) {
    Communicator world(config, collectives::CommOptions{});
    auto tp = world.split(world.rank() / 2, world.rank() % 2, "tp");
    vocab_ops_equal_whole(*tp, 3 + static_cast<std::uint64_t>(world.rank() / 2));
  }));
}

TEST_CASE("tensor-parallel sizes that do not divide are refused on every rank, naming the numbers") {
  require_ok(run_ranks(3, [](const transport::Config& config) {
    Communicator group(config, collectives::CommOptions{});
    auto error_of = [](const std::function<void()>& fn) -> std::string {
      try {
        fn();
      } catch (const std::invalid_argument& e) {
        return e.what();
      }
      return "";
    };
    const std::string column = error_of([&] { ColumnParallelLinear(6, 10, group); });
    check(column.find("out_features = 10 does not divide into 3 tensor-parallel ranks") != std::string::npos, column);
    const std::string row = error_of([&] { RowParallelLinear(8, 6, group); });
    check(row.find("in_features = 8 does not divide into 3") != std::string::npos, row);
    const std::string vocab = error_of([&] { VocabParallelEmbedding(Tensor::zeros({13, 4}), group); });
    check(vocab.find("a vocabulary of 13 does not divide into 3") != std::string::npos, vocab);
  }));
}
