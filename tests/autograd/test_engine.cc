// What backward() promises beyond each op's derivative: accumulation, hooks, freeing the graph,
// no_grad and detach.
#include <catch2/catch.hpp>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "autograd/ops.h"

using namespace ringgrad;

static Tensor leaf(std::vector<double> v) {
  Tensor t = Tensor::from_vector<double>(v, {static_cast<std::int64_t>(v.size())});
  t.set_requires_grad(true);
  return t;
}

TEST_CASE("a tensor used twice gets the sum of both gradients") {
  Tensor x = leaf({3.0});
  Tensor y = x * x + x;  // dy/dx = 2x + 1 = 7
  backward(sum(y));
  REQUIRE(x.grad().item<double>() == 7.0);
}

TEST_CASE("gradients accumulate across backward calls until reset") {
  Tensor x = leaf({1.0, 2.0});
  backward(sum(x * 2.0));
  backward(sum(x * 3.0));
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{5, 5});
  x.set_grad(Tensor());
  backward(sum(x * x));
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{2, 4});
}

TEST_CASE("the post-accumulate hook fires once per backward, after all contributions") {
  Tensor w = leaf({2.0});
  std::vector<double> seen;
  auto handle = autograd::register_post_accumulate_grad_hook(w, [&](Tensor& t) { seen.push_back(t.grad().item<double>()); });
  Tensor y = w * 3.0 + w * w;  // two paths into w: 3 + 2w = 7
  backward(sum(y));
  REQUIRE(seen == std::vector<double>{7.0});
}

TEST_CASE("the graph is freed after backward") {
  Tensor x = leaf({1.0});
  Tensor y = sum(exp(x));
  std::weak_ptr<autograd::Node> exp_node = y.grad_fn()->next_edges.at(0);
  REQUIRE_FALSE(exp_node.expired());
  backward(y);
  REQUIRE(exp_node.expired());
  REQUIRE_THROWS_WITH(backward(y), Catch::Contains("second time"));
}

TEST_CASE("no_grad and detach record nothing") {
  Tensor x = leaf({1.0});
  {
    NoGradGuard guard;
    Tensor y = x * 2.0;
    REQUIRE_FALSE(y.requires_grad());
  }
  REQUIRE((x * 2.0).requires_grad());
  Tensor d = x.detach();
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.storage() == x.storage());
  Tensor z = x * d;  // d is a constant: dz/dx = d = 1
  backward(sum(z));
  REQUIRE(x.grad().item<double>() == 1.0);
}

TEST_CASE("backward needs a scalar or an explicit gradient") {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 2.0;
  REQUIRE_THROWS_WITH(backward(y), Catch::Contains("non-scalar"));
  backward(y, Tensor::from_vector<double>({1.0, 10.0}, {2}));
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{2, 20});
  REQUIRE_THROWS_WITH(backward(Tensor::ones({1})), Catch::Contains("does not require grad"));
}

TEST_CASE("a leaf's grad is its own buffer: adopted when nothing else holds it, copied when shared") {
  // add's backward hands the same gradient to both inputs: each leaf needs its own copy.
  Tensor a = leaf({1.0, 2.0}), b = leaf({3.0, 4.0});
  backward(sum(a + b));
  REQUIRE(a.grad().storage() != b.grad().storage());
  a.grad().data<double>()[0] = 100.0;
  REQUIRE(b.grad().to_vector<double>() == std::vector<double>{1, 1});

  // A gradient the user still holds (the seed of a leaf's own backward) is copied too.
  Tensor x = leaf({1.0, 2.0});
  Tensor seed = Tensor::from_vector<double>({5.0, 6.0}, {2});
  backward(x, seed);
  x.grad().data<double>()[1] = -1.0;
  REQUIRE(seed.to_vector<double>() == std::vector<double>{5, 6});

  // mul's fresh gradient is nobody else's: x.grad() and this handle are its only holders.
  Tensor w = leaf({1.0, 2.0});
  backward(sum(w * 3.0));
  const Tensor g = w.grad();
  REQUIRE(g.storage().use_count() == 2);
  REQUIRE(g.to_vector<double>() == std::vector<double>{3, 3});
  backward(sum(w * 2.0));  // then accumulates in place as before
  REQUIRE(w.grad().to_vector<double>() == std::vector<double>{5, 5});
}
