// The GPT model as a whole: causality, the closed-form loss at initialisation, memorising one
// batch, exact resume from a checkpoint, the graph freed after backward, and sampling.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "nn/lr_schedule.h"
#include "nn/safetensors.h"
#include "nn/transformer/checkpoint.h"
#include "nn/transformer/gpt.h"
#include "nn/transformer/train_step.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::nn;

namespace {

GPTConfig tiny_config() {
  GPTConfig c;
  c.n_layer = 2, c.n_head = 2, c.n_embd = 16, c.block_size = 8, c.vocab_size = 11;
  return c;
}

Tensor random_ids(std::int64_t b, std::int64_t t, std::int64_t vocab, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(b * t));
  for (auto& id : ids) id = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(vocab)));
  return Tensor::from_vector(ids, {b, t});
}

data::CharDataset tiny_corpus() {
  std::string text;
  Generator gen(5);
  for (int i = 0; i < 4000; ++i) text.push_back(static_cast<char>('a' + gen.next_below(11)));
  return data::CharDataset(text);
}

}  // namespace

TEST_CASE("GPT: parameter names follow nanoGPT and weight tying shares wte") {
  manual_seed(0);
  GPTConfig c = tiny_config();
  GPT tied(c);
  const auto names = tied.state_dict();
  for (const char* n : {"wte.weight", "wpe.weight", "h.0.ln_1.weight", "h.0.attn.c_attn.weight", "h.0.attn.c_proj.bias",
                        "h.1.mlp.c_fc.weight", "h.1.mlp.c_proj.weight", "h.1.ln_2.bias", "ln_f.weight"}) {
    CHECK(names.count(n) == 1);
  }
  CHECK(names.count("lm_head.weight") == 0);
  c.tie_weights = false, c.bias = false;
  GPT untied(c);
  CHECK(untied.state_dict().count("lm_head.weight") == 1);
  CHECK(untied.state_dict().count("h.0.attn.c_attn.bias") == 0);
}

TEST_CASE("GPT: changing token t+1 leaves the logits at positions <= t unchanged") {
  manual_seed(1);
  GPT model(tiny_config());
  NoGradGuard no_grad;
  Tensor ids = random_ids(2, 8, 11, 2);
  const auto before = model(ids).to_vector<float>();
  ids.data<std::int64_t>()[5] = (ids.data<std::int64_t>()[5] + 1) % 11;  // row 0, t = 5
  const auto after = model(ids).to_vector<float>();
  const std::size_t v = 11;
  for (std::size_t t = 0; t < 8; ++t) {
    bool same = true;
    for (std::size_t j = 0; j < v; ++j) same &= before[t * v + j] == after[t * v + j];
    CHECK(same == (t < 5));  // positions before 5 see no change, 5 and later do
  }
  const auto other_row = std::equal(before.begin() + 8 * v, before.end(), after.begin() + 8 * v);
  CHECK(other_row);
}

TEST_CASE("GPT: loss at initialisation is within 0.1 of ln(V)") {
  manual_seed(3);
  GPTConfig c = tiny_config();
  c.vocab_size = 65, c.n_embd = 32, c.block_size = 16;
  GPT model(c);
  NoGradGuard no_grad;
  const Tensor ids = random_ids(8, 16, 65, 4);
  const double loss = cross_entropy(model(ids), random_ids(8, 16, 65, 5)).item<double>();
  CHECK(std::abs(loss - std::log(65.0)) < 0.1);
}

TEST_CASE("GPT: one batch is memorised to loss < 0.1") {
  manual_seed(6);
  GPT model(tiny_config());
  AdamW opt(weight_decay_groups(model, 0.0), {3e-3, 0.9, 0.99, 1e-8});
  const data::Batch batch{random_ids(4, 8, 11, 7), random_ids(4, 8, 11, 8)};
  double loss = 0;
  for (int i = 0; i < 300 && (i == 0 || loss >= 0.1); ++i) loss = train_step(model, opt, batch, 3e-3, 1.0).loss;
  CHECK(loss < 0.1);
}

TEST_CASE("GPT: backward frees the graph and the activations it holds") {
  manual_seed(7);
  GPT model(tiny_config());
  std::weak_ptr<autograd::Node> logits_node;
  Tensor loss;
  {
    const Tensor logits = model(random_ids(2, 8, 11, 9));
    logits_node = logits.grad_fn();
    loss = cross_entropy(logits, random_ids(2, 8, 11, 10));
  }
  CHECK(!logits_node.expired());  // the graph keeps it until backward
  backward(loss);
  CHECK(logits_node.expired());
}

TEST_CASE("GPT: resuming from a checkpoint gives the same next-step loss as not stopping") {
  const data::CharDataset ds = tiny_corpus();
  GPTConfig c = tiny_config();
  c.dropout = 0.1;  // so the dropout generator's state matters too
  const CosineSchedule schedule{1e-2, 1e-3, 2, 10};
  const std::string path = (std::filesystem::temp_directory_path() / "ringgrad_gpt_resume.safetensors").string();

  // Uninterrupted: 6 steps, checkpoint after the 4th.
  manual_seed(11);
  GPT model(c);
  AdamW opt(weight_decay_groups(model, 0.1), {1e-2, 0.9, 0.99, 1e-8});
  TrainState state{0, Generator(12), default_generator()};
  std::vector<double> losses;
  for (; state.iter < 6; ++state.iter) {
    if (state.iter == 4) {
      state.dropout_gen = default_generator();
      save_checkpoint(path, model, opt, state);
    }
    losses.push_back(train_step(model, opt, ds.get_batch(data::Split::Train, 4, 8, state.data_gen),
                                schedule.at(state.iter), 1.0).loss);
  }

  // Resumed: a differently initialised model, loaded from the checkpoint.
  manual_seed(99);
  GPT resumed(checkpoint_config(path));
  AdamW opt2(weight_decay_groups(resumed, 0.1), {1e-2, 0.9, 0.99, 1e-8});
  TrainState s2 = load_checkpoint(path, resumed, opt2);
  default_generator() = s2.dropout_gen;
  CHECK(s2.iter == 4);
  for (; s2.iter < 6; ++s2.iter) {
    const double loss = train_step(resumed, opt2, ds.get_batch(data::Split::Train, 4, 8, s2.data_gen),
                                   schedule.at(s2.iter), 1.0).loss;
    CHECK(loss == losses[static_cast<std::size_t>(s2.iter)]);  // bit for bit
  }
  std::filesystem::remove(path);
}

TEST_CASE("GPT checkpoint: the vocabulary read back byte for byte (newline, quote, backslash, past 0x7f), another refused, none recorded let through") {
  const std::string path = (std::filesystem::temp_directory_path() / "ringgrad_gpt_vocab.safetensors").string();
  const std::string vocab = std::string("\n\"\\az") + "\x80\xff";
  save_safetensors(path, {}, checkpoint_metadata(tiny_config(), vocab, TrainState{0, Generator(1), Generator(2)}, 0));
  const auto metadata = load_safetensors(path).metadata;  // through the file's JSON header
  CHECK(metadata.at("vocab_hex") == "0a225c617a80ff");   // by hand: the bytes' codes
  CHECK(checkpoint_vocab(metadata, path) == vocab);
  CHECK_NOTHROW(check_checkpoint_vocab(path, vocab));

  // The same size, '#' where 'a' was: refused, naming the file and the bytes each side lacks.
  std::string swapped = vocab;
  swapped[3] = '#';
  try {
    check_checkpoint_vocab(path, swapped);
    FAIL("another vocabulary of the same size was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.starts_with(path + ": trained on another vocabulary (7 characters; this text has 7)"));
    CHECK(what.find("only in the checkpoint's: 'a'; only in this text's: '#'") != std::string::npos);
  }
  CHECK_THROWS_AS(check_checkpoint_vocab(path, vocab.substr(1)), std::invalid_argument);

  // A checkpoint without one (from before vocabularies were recorded) is left to the shapes.
  auto before = metadata;
  before.erase("vocab_hex");
  CHECK(checkpoint_vocab(before, path).empty());
  save_safetensors(path, {}, before);
  CHECK_NOTHROW(check_checkpoint_vocab(path, swapped));
  std::filesystem::remove(path);
}

TEST_CASE("GPT::generate: shape, seeded, and top_k = 1 is greedy") {
  manual_seed(13);
  GPT model(tiny_config());
  const Tensor prompt = random_ids(2, 3, 11, 14);
  Generator g1(1), g2(1), g3(2);
  const Tensor a = model.generate(prompt, 10, 1.0, 0, g1);  // runs past block_size 8: the context is cropped
  CHECK(a.shape() == Shape{2, 13});
  CHECK(a.to_vector<std::int64_t>() == model.generate(prompt, 10, 1.0, 0, g2).to_vector<std::int64_t>());
  CHECK(model.is_training());  // restored

  const Tensor greedy = model.generate(prompt, 1, 1.0, 1, g3);
  NoGradGuard no_grad;
  model.eval();
  const auto logits = model(prompt).to_vector<float>();
  for (std::size_t b = 0; b < 2; ++b) {
    const auto row = logits.begin() + static_cast<std::ptrdiff_t>((b * 3 + 2) * 11);
    CHECK(greedy.to_vector<std::int64_t>()[b * 4 + 3] == std::max_element(row, row + 11) - row);
  }
}

TEST_CASE("full_split_loss: the mean over every validation token of -log p(target), computed token by token") {
  const data::CharDataset ds = tiny_corpus();  // 400 validation tokens: 399 predictions, 49 windows of 8 and one of 7
  manual_seed(3);
  GPT model(tiny_config());
  const SplitLoss got = full_split_loss(model, ds, data::Split::Val, 5);
  CHECK(got.tokens == ds.size(data::Split::Val) - 1);
  // The reference: window by window, each position's log-softmax written out in doubles.
  NoGradGuard no_grad;
  model.eval();
  double sum = 0;
  std::int64_t count = 0;
  for (std::int64_t w = 0; w < ds.window_count(data::Split::Val, 8); ++w) {
    const data::Batch b = ds.windows(data::Split::Val, 8, w, 1);
    const auto logits = model(b.x).to_vector<float>();
    const auto y = b.y.to_vector<std::int64_t>();
    for (std::size_t i = 0; i < y.size(); ++i) {
      const float* row = logits.data() + i * 11;
      double top = row[0], z = 0;
      for (int v = 1; v < 11; ++v) top = std::max(top, static_cast<double>(row[v]));
      for (int v = 0; v < 11; ++v) z += std::exp(row[v] - top);
      sum += std::log(z) + top - row[y[i]];
      ++count;
    }
  }
  CHECK(count == got.tokens);
  CHECK(std::abs(got.loss - sum / static_cast<double>(count)) < 1e-5);
}

TEST_CASE("GPT with rotary embeddings: no wpe, and changing token t+1 still leaves the logits at positions <= t unchanged") {
  GPTConfig c = tiny_config();
  c.rotary = true;
  manual_seed(4);
  GPT model(c);
  bool has_wpe = false;
  for (auto& [name, p] : model.named_parameters()) has_wpe |= name.starts_with("wpe");
  CHECK_FALSE(has_wpe);
  NoGradGuard no_grad;
  const Tensor a = random_ids(1, 8, 11, 3);
  Tensor b = kernels::clone(a);
  b.data<std::int64_t>()[5] = (a.data<std::int64_t>()[5] + 1) % 11;
  const auto la = model(a).to_vector<float>(), lb = model(b).to_vector<float>();
  for (std::size_t i = 0; i < 5 * 11; ++i) REQUIRE(la[i] == lb[i]);  // positions 0..4
  bool later_differs = false;
  for (std::size_t i = 5 * 11; i < la.size(); ++i) later_differs |= la[i] != lb[i];
  CHECK(later_differs);
}

TEST_CASE("GPT with experts: the checkpoint records the MoE config, a dense one reads as dense") {
  GPTConfig c = tiny_config();
  c.moe_experts = 4, c.moe_top_k = 1, c.moe_capacity_factor = 1.5, c.moe_aux_loss_coef = 0.05;
  manual_seed(6);
  GPT model(c);
  const std::string path = (std::filesystem::temp_directory_path() / "ringgrad_gpt_moe.safetensors").string();
  AdamW opt(weight_decay_groups(model, 0.1), {1e-2, 0.9, 0.99, 1e-8});
  save_checkpoint(path, model, opt, TrainState{0, Generator(1), default_generator()});
  const GPTConfig saved = checkpoint_config(path);
  CHECK(saved.moe_experts == 4);
  CHECK(saved.moe_top_k == 1);
  CHECK(saved.moe_capacity_factor == 1.5);
  CHECK(saved.moe_aux_loss_coef == 0.05);
  GPT dense(tiny_config());
  AdamW dense_opt(weight_decay_groups(dense, 0.1), {1e-2, 0.9, 0.99, 1e-8});
  save_checkpoint(path, dense, dense_opt, TrainState{0, Generator(1), default_generator()});
  CHECK(checkpoint_config(path).moe_experts == 0);
  std::filesystem::remove(path);
}

TEST_CASE("GPT with QK-norm and ReLU^2: the MLP is c_proj(max(c_fc x, 0)^2), the checkpoint records both, the model stays causal") {
  GPTConfig c = tiny_config();
  c.qk_norm = true, c.relu_squared = true, c.rotary = true;
  manual_seed(6);
  GPT model(c);
  NoGradGuard no_grad;
  MLP& mlp = *model.h[0]->mlp;
  const Tensor x = Tensor::zeros({2, 3, c.n_embd});
  Generator gen(8);
  kernels::normal_(x, 0.0, 1.0, gen);
  const auto hidden = (*mlp.c_fc)(x).to_vector<float>();
  std::vector<float> squared(hidden.size());
  for (std::size_t i = 0; i < hidden.size(); ++i) squared[i] = hidden[i] > 0 ? hidden[i] * hidden[i] : 0.0f;
  const auto want = (*mlp.c_proj)(Tensor::from_vector(squared, {2, 3, 4 * c.n_embd})).to_vector<float>();
  const auto got = mlp(x).to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == want[i]);

  const std::string path = (std::filesystem::temp_directory_path() / "ringgrad_gpt_flags.safetensors").string();
  AdamW opt(weight_decay_groups(model, 0.1), {1e-2, 0.9, 0.99, 1e-8});
  save_checkpoint(path, model, opt, TrainState{0, Generator(1), default_generator()});
  const GPTConfig saved = checkpoint_config(path);
  CHECK((saved.qk_norm && saved.relu_squared && saved.rotary));
  std::filesystem::remove(path);

  const Tensor a = random_ids(1, 8, 11, 3);
  Tensor b = kernels::clone(a);
  b.data<std::int64_t>()[5] = (a.data<std::int64_t>()[5] + 1) % 11;
  const auto la = model(a).to_vector<float>(), lb = model(b).to_vector<float>();
  for (std::size_t i = 0; i < 5 * 11; ++i) REQUIRE(la[i] == lb[i]);  // positions 0..4
}
