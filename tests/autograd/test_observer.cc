// The engine's observer hook (autograd/backward_observer.h): it is told of each pass and of each
// node once, in the order the engine runs them, which puts a leaf's AccumulateGrad right after
// the node that completed its gradient; a node's sequence number says which forward call made
// it; and with no observer set nothing is told.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/backward_observer.h"
#include "autograd/engine.h"
#include "autograd/node.h"
#include "autograd/ops.h"

using namespace ringgrad;
using autograd::Node;

namespace {

// Logs what it is told: "begin", "end", and "+name #seq" / "-name #seq" around each node.
struct Log final : autograd::BackwardObserver {
  std::vector<std::string> events;
  void on_backward_begin() override { events.push_back("begin"); }
  void on_backward_end() override { events.push_back("end"); }
  void on_node_begin(const Node& n) override { events.push_back("+" + n.name() + " #" + std::to_string(n.sequence_nr())); }
  void on_node_end(const Node& n) override { events.push_back("-" + n.name() + " #" + std::to_string(n.sequence_nr())); }
};

Tensor leaf(double value) {
  Tensor t = Tensor::from_vector<double>({value}, {1});
  t.set_requires_grad(true);
  return t;
}

}  // namespace

TEST_CASE("the observer sees each node once, a leaf's AccumulateGrad right after the node that completed it") {
  Tensor w = leaf(2.0), x = leaf(0.5);
  // mul's first input is the parameter w; its second, a chain down to x. Taken from one stack
  // in turn, w's AccumulateGrad would wait behind tanh, exp and x's.
  const std::uint64_t s0 = autograd::next_sequence_nr();
  Tensor t = tanh(exp(x));  // exp #s0, x's AccumulateGrad #s0+1, tanh #s0+2
  Tensor y = mul(w, t);     // mul #s0+3, w's AccumulateGrad #s0+4
  Tensor loss = sum(y);     // sum #s0+5
  auto seq = [&](std::uint64_t k) { return " #" + std::to_string(s0 + k); };
  Log log;
  autograd::set_backward_observer(&log);
  backward(loss);
  autograd::set_backward_observer(nullptr);
  const std::vector<std::string> expected{
      "begin",
      "+sum" + seq(5), "-sum" + seq(5),
      "+mul" + seq(3), "-mul" + seq(3),
      "+AccumulateGrad" + seq(4), "-AccumulateGrad" + seq(4),  // w's, at once
      "+tanh" + seq(2), "-tanh" + seq(2),
      "+exp" + seq(0), "-exp" + seq(0),
      "+AccumulateGrad" + seq(1), "-AccumulateGrad" + seq(1),  // x's
      "end"};
  CHECK(log.events == expected);
  CHECK(w.grad().item<double>() == Approx(std::tanh(std::exp(0.5))));

  // With none set, backward tells nobody.
  backward(sum(mul(w, x)));
  CHECK(log.events.size() == expected.size());
}
