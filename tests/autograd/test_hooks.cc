// Post-accumulate-grad hooks and their handles: a handle removes its own hook and no other,
// whether it is destroyed, moved, reassigned or outlives its tensor; hooks see the complete
// gradient; only leaves that require grad take hooks.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/hooks.h"
#include "autograd/ops.h"

using namespace ringgrad;
using autograd::register_post_accumulate_grad_hook;
using autograd::RemovableHandle;

namespace {

Tensor leaf(double value) {
  Tensor t = Tensor::from_vector<double>({value}, {1});
  t.set_requires_grad(true);
  return t;
}

// One backward of sum(w * 3): w's gradient is 3 more after each.
void run_backward(const Tensor& w) { backward(sum(w * 3.0)); }

// A hook that appends `name` to `log` each time it runs.
std::function<void(Tensor&)> logger(std::vector<std::string>& log, std::string name) {
  return [&log, name](Tensor&) { log.push_back(name); };
}

}  // namespace

TEST_CASE("hooks run in registration order, and a handle removes only its own hook") {
  Tensor w = leaf(1.0);
  std::vector<std::string> log;
  RemovableHandle a = register_post_accumulate_grad_hook(w, logger(log, "a"));
  RemovableHandle b = register_post_accumulate_grad_hook(w, logger(log, "b"));
  RemovableHandle c = register_post_accumulate_grad_hook(w, logger(log, "c"));
  run_backward(w);
  REQUIRE(log == std::vector<std::string>{"a", "b", "c"});
  b.remove();
  REQUIRE_FALSE(b.active());
  b.remove();  // a second remove does nothing (and must not take another hook with it)
  run_backward(w);
  REQUIRE(log == std::vector<std::string>{"a", "b", "c", "a", "c"});
  REQUIRE(a.active());
  REQUIRE(c.active());
}

TEST_CASE("a handle going out of scope removes its hook and leaves the others") {
  Tensor w = leaf(1.0);
  std::vector<std::string> log;
  RemovableHandle kept = register_post_accumulate_grad_hook(w, logger(log, "kept"));
  {
    RemovableHandle scoped = register_post_accumulate_grad_hook(w, logger(log, "scoped"));
    run_backward(w);
  }
  run_backward(w);
  REQUIRE(log == std::vector<std::string>{"kept", "scoped", "kept"});
}

TEST_CASE("moving a handle moves the ownership of its hook") {
  Tensor w = leaf(1.0);
  std::vector<std::string> log;
  std::optional<RemovableHandle> moved_to;
  {
    RemovableHandle original = register_post_accumulate_grad_hook(w, logger(log, "x"));
    moved_to.emplace(std::move(original));
    REQUIRE_FALSE(original.active());  // moved from: owns nothing
  }  // the moved-from handle is destroyed here and must remove nothing
  run_backward(w);
  REQUIRE(log == std::vector<std::string>{"x"});

  // Assigning over a handle removes the hook it held, and takes the other's.
  RemovableHandle y = register_post_accumulate_grad_hook(w, logger(log, "y"));
  *moved_to = std::move(y);  // removes x, now owns y
  run_backward(w);
  REQUIRE(log == std::vector<std::string>{"x", "y"});
  moved_to.reset();  // removes y
  run_backward(w);
  REQUIRE(log == std::vector<std::string>{"x", "y"});
}

TEST_CASE("a handle may outlive its tensor, and a copy of the tensor shares its hooks") {
  std::vector<std::string> log;
  RemovableHandle handle;
  REQUIRE_FALSE(handle.active());
  {
    Tensor w = leaf(1.0);
    handle = register_post_accumulate_grad_hook(w, logger(log, "w"));
    Tensor same = w;  // a handle copy: the same parameter, the same hooks
    run_backward(same);
    REQUIRE(log == std::vector<std::string>{"w"});
  }  // the tensor and its hook list are gone
  handle.remove();  // nothing left to remove: no effect, no crash
  REQUIRE_FALSE(handle.active());
}

TEST_CASE("a hook sees the complete gradient and may remove itself (from the next backward on)") {
  Tensor w = leaf(2.0);
  std::vector<double> seen;
  RemovableHandle self;
  self = register_post_accumulate_grad_hook(w, [&](Tensor& t) {
    seen.push_back(t.grad().item<double>());
    self.remove();
  });
  RemovableHandle other = register_post_accumulate_grad_hook(w, [&](Tensor& t) { seen.push_back(-t.grad().item<double>()); });
  backward(sum(w * 3.0 + w * w));  // two paths into w: 3 + 2w = 7
  backward(sum(w * 3.0 + w * w));  // accumulated: 14; the first hook is gone
  REQUIRE(seen == std::vector<double>{7.0, -7.0, -14.0});
}

TEST_CASE("hooks go only on leaves that require grad") {
  Tensor data = Tensor::from_vector<double>({1.0}, {1});
  REQUIRE_THROWS_WITH(register_post_accumulate_grad_hook(data, [](Tensor&) {}), Catch::Contains("does not require grad"));
  Tensor w = leaf(1.0);
  Tensor computed = w * 2.0;
  REQUIRE_THROWS_WITH(register_post_accumulate_grad_hook(computed, [](Tensor&) {}), Catch::Contains("is not a leaf"));
}
