// MuonWithAdamW against its two halves stepped by hand: over a small GPT's groups
// (muon_adamw_groups), two steps with a changed learning rate leave every parameter where a
// separate Muon (at lr * muon.lr / adamw.lr) and a separate AdamW leave their copies, bit for bit;
// each group reports only its own states.
#include <catch2/catch.hpp>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "nn/muon_adamw.h"
#include "nn/transformer/gpt.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using namespace ringgrad::nn;

namespace {

GPTConfig tiny() {
  GPTConfig c;
  c.n_layer = 2, c.n_head = 2, c.n_embd = 8, c.block_size = 4, c.vocab_size = 7, c.tie_weights = false;
  return c;
}

// Gives every parameter of `model` the gradient of one loss on fixed tokens.
void gradients(GPT& model) {
  const Tensor ids = Tensor::from_vector(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 0, 1}, {2, 4});
  model.zero_grad();
  backward(cross_entropy(model(ids), ids));
}

}  // namespace

TEST_CASE("MuonWithAdamW: Muon on the blocks' matrices and AdamW on the rest, as the two stepped apart") {
  manual_seed(2);
  GPT combined(tiny());
  manual_seed(2);
  GPT apart(tiny());
  const auto groups = muon_adamw_groups(combined, 0.1);
  REQUIRE(groups.size() == 3);
  for (const auto& [name, p] : combined.named_parameters()) {
    const bool hidden = name.starts_with("h.") && p.dim() == 2;
    bool in_muon = false;
    for (const Tensor& q : groups[0].params) in_muon |= q.storage() == p.storage();
    CHECK(in_muon == hidden);
  }
  const MuonOptions muon_options{0.04, 0.95, true, 5};
  const AdamOptions adam_options{2e-3, 0.9, 0.99, 1e-8};
  MuonWithAdamW optimizer(groups, 1, muon_options, adam_options);
  const auto apart_groups = muon_adamw_groups(apart, 0.1);
  Muon muon({apart_groups[0]}, muon_options);
  AdamW adamw({apart_groups[1], apart_groups[2]}, adam_options);
  for (const double lr : {2e-3, 1e-3}) {
    gradients(combined);
    gradients(apart);
    optimizer.set_lr(lr);
    optimizer.step();
    muon.set_lr(lr * 0.04 / 2e-3);
    adamw.set_lr(lr);
    muon.step();
    adamw.step();
  }
  const auto a = combined.named_parameters(), b = apart.named_parameters();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto x = a[i].second.to_vector<float>(), y = b[i].second.to_vector<float>();
    for (std::size_t j = 0; j < x.size(); ++j) REQUIRE(x[j] == y[j]);
  }
  CHECK(optimizer.steps() == 2);
  CHECK(optimizer.group_state_names(0) == std::vector<std::string>{"momentum_buffer"});
  CHECK(optimizer.group_state_names(2) == std::vector<std::string>{"exp_avg", "exp_avg_sq"});
  CHECK_THROWS_WITH(MuonWithAdamW(groups, 4, muon_options, adam_options), Catch::Contains("4 Muon groups of 3 groups"));
}
