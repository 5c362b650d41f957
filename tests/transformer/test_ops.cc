// The transformer's ops against central differences in float64 (tolerance as in
// tests/autograd), and their fused forwards against the same math composed from plain ops.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <utility>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/linear.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "support/gradcheck.h"
#include "tensor/attention.h"
#include "tensor/attention_tiles.h"
#include "tensor/elementwise.h"
#include "tensor/layer_norm.h"
#include "tensor/precision.h"
#include "tensor/reduce.h"
#include "tensor/qk_norm.h"
#include "tensor/rotary.h"
#include "tensor/view.h"

using namespace ringgrad;
using ringgrad::testing::gradcheck;
using ringgrad::testing::random_input;
using Inputs = std::vector<Tensor>;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double d = 0;
  for (std::size_t i = 0; i < x.size(); ++i) d = std::max(d, std::abs(x[i] - y[i]));
  return d;
}

// Causal attention written the textbook way: split, transpose to heads, masked softmax, merge.
Tensor attention_reference(const Tensor& qkv, std::int64_t n_head) {
  const std::int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3, hs = c / n_head;
  auto heads = [&](std::int64_t i) {  // [B, T, C] slice i -> [B, H, T, hs]
    return transpose(reshape(narrow(qkv, 2, i * c, c), {b, t, n_head, hs}), 1, 2);
  };
  Tensor scores = matmul(heads(0), transpose(heads(1), -1, -2)) * (1.0 / std::sqrt(static_cast<double>(hs)));
  std::vector<double> mask(static_cast<std::size_t>(t * t));
  for (std::int64_t i = 0; i < t; ++i) {
    for (std::int64_t j = i + 1; j < t; ++j) mask[static_cast<std::size_t>(i * t + j)] = -1e30;
  }
  Tensor probs = softmax(scores + Tensor::from_vector(mask, {t, t}), -1);
  return reshape(transpose(matmul(probs, heads(2)), 1, 2), {b, t, c});
}

}  // namespace

TEST_CASE("layer_norm: gradients, with and without bias") {
  Tensor x = random_input({2, 3, 5}, 1), w = random_input({5}, 2), b = random_input({5}, 3);
  CHECK(gradcheck([](const Inputs& in) { return layer_norm(in[0], in[1], in[2]); }, {x, w, b}) == "");
  CHECK(gradcheck([](const Inputs& in) { return layer_norm(in[0], in[1], Tensor()); }, {x, w}) == "");
}

TEST_CASE("layer_norm: forward equals (x - mean) / sqrt(var + eps) * w + b") {
  Tensor x = random_input({4, 6}, 4), w = random_input({6}, 5), b = random_input({6}, 6);
  NoGradGuard no_grad;
  const Tensor mu = mean(x, {-1}, true);
  const Tensor var = mean(pow(x - mu, 2.0), {-1}, true);
  const Tensor expected = (x - mu) / sqrt(var + 1e-5) * w + b;
  CHECK(max_abs_diff(layer_norm(x, w, b), expected) < 1e-12);
}

TEST_CASE("linear: gradients of x, W and b, batched input") {
  Tensor x = random_input({2, 3, 4}, 7), w = random_input({5, 4}, 8), b = random_input({5}, 9);
  CHECK(gradcheck([](const Inputs& in) { return linear(in[0], in[1], in[2]); }, {x, w, b}) == "");
  CHECK(gradcheck([](const Inputs& in) { return linear(in[0], in[1]); }, {x, w}) == "");
  NoGradGuard no_grad;
  CHECK(max_abs_diff(linear(x, w, b), matmul(x, transpose(w, 0, 1)) + b) < 1e-12);
}

TEST_CASE("causal_self_attention: gradients with one, two and three heads") {
  for (std::int64_t heads : {1, 2, 3}) {
    INFO("heads " << heads);
    Tensor qkv = random_input({2, 4, 3 * 6}, 10 + static_cast<std::uint64_t>(heads));
    CHECK(gradcheck([heads](const Inputs& in) { return causal_self_attention(in[0], heads); }, {qkv}) == "");
  }
}

TEST_CASE("causal_self_attention: forward equals the masked-softmax composition") {
  Tensor qkv = random_input({3, 5, 3 * 8}, 20);
  NoGradGuard no_grad;
  CHECK(max_abs_diff(causal_self_attention(qkv, 4), attention_reference(qkv, 4)) < 1e-12);
  // float32 (its own exp and GEMM) against float64, on scores large enough to exercise exp
  const Tensor big = kernels::mul(qkv, Tensor::scalar(8.0, DType::Float64));
  const Tensor y32 = causal_self_attention(kernels::to_dtype(big, DType::Float32), 4);
  CHECK(max_abs_diff(kernels::to_dtype(y32, DType::Float64), causal_self_attention(big, 4)) < 1e-5);
  CHECK_THROWS_AS(causal_self_attention(qkv, 3), std::invalid_argument);  // 8 channels, 3 heads
}

// The CPU kernel takes rows 32 at a time and skips the masked triangle (tensor/attention.cc);
// T = 33 and 70 end in a partial block. Both passes against the composition's, float64.
TEST_CASE("causal_self_attention: forward and backward in row blocks equal the reference at T = 33 and 70") {
  for (std::int64_t t : {33, 70}) {
    INFO("T " << t);
    const Tensor dy = random_input({2, t, 8}, 31);
    const auto run = [&](auto attention) {
      Tensor qkv = random_input({2, t, 3 * 8}, 30);
      qkv.set_requires_grad(true);
      const Tensor y = attention(qkv);
      backward(y, dy);
      return std::pair{y.detach(), qkv.grad()};
    };
    const auto [y, dqkv] = run([](const Tensor& qkv) { return causal_self_attention(qkv, 2); });
    const auto [y_ref, dqkv_ref] = run([](const Tensor& qkv) { return attention_reference(qkv, 2); });
    CHECK(max_abs_diff(y, y_ref) < 1e-12);
    CHECK(max_abs_diff(dqkv, dqkv_ref) < 1e-12);
  }
}

// The float32 tile kernels (tensor/attention_tiles.h) against the float64 GEMM path, at head
// sizes and lengths that end tiles and row blocks early.
TEST_CASE("attention tiles: float32 forward and backward equal float64's at T = 1 to 70, hs = 16 to 48") {
  if (!kernels::attention_tiles_run(DType::Float32, 16) || matmul_precision() != MatmulPrecision::kFloat32) {
    WARN("skipped: the attention tile kernels do not run here (no AVX2 and FMA, or RINGGRAD_ATTENTION_TILES=0)");
    return;
  }
  struct Case {
    std::int64_t t, heads, hs;
  };
  for (const Case c : {Case{1, 1, 16}, Case{5, 2, 16}, Case{17, 3, 32}, Case{33, 2, 48}, Case{64, 4, 32}, Case{70, 1, 16}}) {
    INFO("T " << c.t << ", " << c.heads << " heads of " << c.hs);
    const std::int64_t channels = c.heads * c.hs;
    // Scores of a few units, so the softmax is neither flat nor one-hot.
    const Tensor qkv = kernels::mul(random_input({2, c.t, 3 * channels}, 60 + static_cast<std::uint64_t>(c.t)), 2.0);
    const Tensor dy = random_input({2, c.t, channels}, 61);
    const Tensor qkv32 = kernels::to_dtype(qkv, DType::Float32), dy32 = kernels::to_dtype(dy, DType::Float32);
    const auto at64 = kernels::causal_attention(qkv, c.heads);
    const auto at32 = kernels::causal_attention(qkv32, c.heads);
    CHECK(max_abs_diff(at32.y, at64.y) < 1e-5);
    CHECK(max_abs_diff(at32.att, at64.att) < 1e-5);
    const auto p = at32.att.to_vector<float>();
    bool upper_zero = true;
    for (std::int64_t row = 0; row < 2 * c.heads * c.t; ++row) {  // (batch, head, i): j > i must be 0
      const std::int64_t i = row % c.t;
      for (std::int64_t j = i + 1; j < c.t; ++j) upper_zero = upper_zero && p[static_cast<std::size_t>(row * c.t + j)] == 0.0f;
    }
    CHECK(upper_zero);
    const Tensor d64 = kernels::causal_attention_backward(dy, qkv, at64.att, c.heads);
    const Tensor d32 = kernels::causal_attention_backward(dy32, qkv32, at32.att, c.heads);
    CHECK(max_abs_diff(d32, d64) < 1e-4);
  }
}

TEST_CASE("embedding, gelu, residual add and cross_entropy over a large vocabulary") {
  Tensor table = random_input({7, 3}, 30);
  const Tensor ids = Tensor::from_vector<std::int64_t>({1, 4, 4, 0, 6, 1}, {2, 3});
  CHECK(gradcheck([&](const Inputs& in) { return embedding(in[0], ids); }, {table}) == "");

  Tensor x = random_input({3, 4}, 31), r = random_input({3, 4}, 32);
  {
    NoGradGuard no_grad;
    kernels::mul_(x, 3.0);  // cover GELU's curved region, not just its middle
  }
  CHECK(gradcheck([](const Inputs& in) { return gelu(in[0]); }, {x}) == "");
  CHECK(gradcheck([](const Inputs& in) { return in[0] + gelu(in[1]); }, {r, x}) == "");  // x + f(x) pattern

  Tensor logits = random_input({2, 3, 500}, 33);
  const Tensor targets = Tensor::from_vector<std::int64_t>({0, 499, 250, 7, 7, 311}, {2, 3});
  CHECK(gradcheck([&](const Inputs& in) { return cross_entropy(in[0], targets); }, {logits}) == "");
}

TEST_CASE("dropout: gradient through a fixed mask, expectation kept, off in eval") {
  Tensor x = random_input({4, 5}, 40);
  CHECK(gradcheck([](const Inputs& in) {
          Generator gen(9);  // the same mask at every evaluation
          return dropout(in[0], 0.3, true, gen);
        }, {x}) == "");

  NoGradGuard no_grad;
  Generator gen(1);
  const Tensor ones = Tensor::ones({100000}, DType::Float64);
  const Tensor y = dropout(ones, 0.25, true, gen);
  CHECK(sum(y).item<double>() / 100000 == Approx(1.0).margin(0.01));
  CHECK(sum(kernels::eq(y, Tensor::zeros({1}, DType::Float64))).item<double>() / 100000 == Approx(0.25).margin(0.01));
  CHECK(dropout(ones, 0.25, false, gen).storage() == ones.storage());
  Generator a(5), b(5);
  CHECK(max_abs_diff(dropout(ones, 0.5, true, a), dropout(ones, 0.5, true, b)) == 0);  // seeded
}

TEST_CASE("gelu: float32 (rational tanh) agrees with float64 (std::tanh)") {
  std::vector<double> xs;
  for (int i = -2000; i <= 2000; ++i) xs.push_back(i * 0.005);  // [-10, 10]
  const Tensor x64 = Tensor::from_vector(xs, {static_cast<std::int64_t>(xs.size())});
  const Tensor x32 = kernels::to_dtype(x64, DType::Float32);
  const Tensor g64 = Tensor::ones(x64.shape(), DType::Float64), g32 = Tensor::ones(x32.shape());
  CHECK(max_abs_diff(kernels::gelu(x32), kernels::gelu(x64)) < 2e-6);
  CHECK(max_abs_diff(kernels::gelu_backward(g32, x32), kernels::gelu_backward(g64, x64)) < 1e-5);
}

TEST_CASE("gelu: the slope kept by a training forward gives gelu_backward's bits, contiguous or strided, both dtypes") {
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const bool strided : {false, true}) {
      CAPTURE(dtype_name(dtype), strided);
      // Pre-activations in [-8, 8]: across GELU's bend and past the float tanh's clamp (|u| > 7.9 from |x| 5.3).
      Tensor base = kernels::to_dtype(random_input({6, 2, 40}, 77), dtype);
      kernels::mul_(base, 8.0);
      Tensor x = (strided ? kernels::transpose(base, 0, 2) : base).detach();
      x.set_requires_grad(true);
      const Tensor y = gelu(x);
      const Tensor g = kernels::to_dtype(random_input(y.shape(), 78), dtype);
      backward(y, g);
      CHECK(max_abs_diff(y, kernels::gelu(x.detach())) == 0);
      CHECK(max_abs_diff(x.grad(), kernels::gelu_backward(g, x.detach())) == 0);
    }
  }
}

TEST_CASE("rotary: each (i, i + d/2) pair of q and k turned by t 10000^(-2i/d), v untouched, backward by gradcheck") {
  const std::int64_t heads = 2, d = 4, c = heads * d, t_len = 5;
  const Tensor qkv = random_input({2, t_len, 3 * c}, 41);
  const auto x = qkv.detach().to_vector<double>(), y = kernels::rotary(qkv.detach(), heads).to_vector<double>();
  double worst = 0;
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t t = 0; t < t_len; ++t)
      for (std::int64_t part = 0; part < 3; ++part)
        for (std::int64_t h = 0; h < heads; ++h)
          for (std::int64_t i = 0; i < d / 2; ++i) {
            const std::size_t at = static_cast<std::size_t>((b * t_len + t) * 3 * c + part * c + h * d + i);
            const std::size_t pair = at + static_cast<std::size_t>(d / 2);
            // As a complex number z = x_i + i x_{i+d/2}, rotated: z e^{i theta}.
            const double theta = part == 2 ? 0 : static_cast<double>(t) * std::pow(10000.0, -2.0 * static_cast<double>(i) / d);
            const double re = x[at] * std::cos(theta) - x[pair] * std::sin(theta);
            const double im = x[at] * std::sin(theta) + x[pair] * std::cos(theta);
            worst = std::max({worst, std::abs(y[at] - re), std::abs(y[pair] - im)});
          }
  CHECK(worst < 1e-14);
  const auto back = kernels::rotary(kernels::rotary(qkv.detach(), heads), heads, true).to_vector<double>();
  for (std::size_t i = 0; i < x.size(); ++i) REQUIRE(std::abs(back[i] - x[i]) < 1e-14);
  CHECK(gradcheck([&](const Inputs& in) { return rotary_qk(in[0], heads); }, {qkv}) == "");
  CHECK_THROWS_WITH(kernels::rotary(random_input({1, 2, 18}, 1), 2), Catch::Contains("of 2 heads of even size"));
}

TEST_CASE("rotary: a slice of the sequence turned from its offset equals those rows of the whole turned from 0") {
  // What a context-parallel rank does with its positions [offset, offset + 3) of 7; and back.
  const std::int64_t heads = 2, offset = 4, len = 3;
  const Tensor qkv = random_input({2, 7, 3 * heads * 4}, 43);
  Tensor slice = kernels::contiguous(kernels::narrow(qkv.detach(), 1, offset, len));
  slice.set_requires_grad(true);
  const Tensor whole = kernels::narrow(kernels::rotary(qkv.detach(), heads), 1, offset, len);
  CHECK(max_abs_diff(kernels::rotary(slice.detach(), heads, false, offset), whole) == 0);
  CHECK(max_abs_diff(kernels::rotary(whole, heads, true, offset), slice.detach()) < 1e-14);
  CHECK(gradcheck([&](const Inputs& in) { return rotary_qk(in[0], heads, offset); }, {slice}) == "");
}

TEST_CASE("rotary: q_t . k_s after the rotation depends on t - s only") {
  // One head of size 6: a query and a key, placed at positions (4, 1) and again at (6, 3).
  const std::int64_t d = 6, t_len = 8;
  const Tensor qk = random_input({1, 1, 3 * d}, 7);
  auto dot_at = [&](std::int64_t tq, std::int64_t tk) {
    Tensor qkv = Tensor::zeros({1, t_len, 3 * d}, DType::Float64);
    const auto src = qk.detach().to_vector<double>();
    double* p = qkv.data<double>();
    for (std::int64_t i = 0; i < d; ++i) p[tq * 3 * d + i] = src[static_cast<std::size_t>(i)];          // q at tq
    for (std::int64_t i = 0; i < d; ++i) p[tk * 3 * d + d + i] = src[static_cast<std::size_t>(d + i)];  // k at tk
    const auto r = kernels::rotary(qkv, 1).to_vector<double>();
    double dot = 0;
    for (std::int64_t i = 0; i < d; ++i) dot += r[static_cast<std::size_t>(tq * 3 * d + i)] * r[static_cast<std::size_t>(tk * 3 * d + d + i)];
    return dot;
  };
  CHECK(std::abs(dot_at(4, 1) - dot_at(6, 3)) < 1e-12);
  CHECK(std::abs(dot_at(4, 1) - dot_at(5, 1)) > 1e-6);  // and it does depend on the distance
}

TEST_CASE("qk_norm: each q and k head vector divided by its root-mean-square, v untouched, backward by gradcheck") {
  const std::int64_t heads = 2, d = 3, c = heads * d, t_len = 4;
  const Tensor qkv = random_input({2, t_len, 3 * c}, 43);
  // The same from plain ops: [B, T, 3, H, d], RMS over d; q and k scaled by 1 / RMS, v by 1.
  const Tensor split = reshape(qkv.detach(), {2, t_len, 3, heads, d});
  const Tensor rms = sqrt(mean(split * split, {-1}, true) + 1e-6);
  const Tensor is_qk = Tensor::from_vector(std::vector<double>{1, 1, 0}, {1, 1, 3, 1, 1});
  const Tensor reference = reshape(split * (is_qk / rms + (-is_qk + 1.0)), {2, t_len, 3 * c});
  CHECK(max_abs_diff(kernels::qk_norm(qkv.detach(), heads), reference) < 1e-14);
  CHECK(gradcheck([&](const Inputs& in) { return qk_norm(in[0], heads); }, {qkv}) == "");
  CHECK_THROWS_WITH(kernels::qk_norm(random_input({1, 2, 15}, 1), 2), Catch::Contains("of 2 heads"));
}

// The float32 loops are built per instruction set (tensor/cpu_clones.h) and run the clone for
// this CPU; tiny shapes would stay in their scalar tails, so these use the baby GPT's.
TEST_CASE("float32 kernels at the baby GPT shapes agree with float64 (layer norm, attention, GELU, broadcast add)") {
  NoGradGuard no_grad;
  const auto f32 = [](const Tensor& t) { return kernels::to_dtype(t, DType::Float32); };
  const auto close = [](const Tensor& single, const Tensor& twice, double tol) {
    return max_abs_diff(kernels::to_dtype(single, DType::Float64), twice) < tol;
  };
  const Tensor x = random_input({2, 64, 128}, 40), w = random_input({128}, 41), b = random_input({128}, 42);
  const Tensor dy = random_input({2, 64, 128}, 43);
  const auto ln64 = kernels::layer_norm(x, w, b, 1e-5);
  const auto ln32 = kernels::layer_norm(f32(x), f32(w), f32(b), 1e-5);
  CHECK(close(ln32.y, ln64.y, 1e-5));
  const auto g64 = kernels::layer_norm_backward(dy, x, w, ln64.mean, ln64.rstd, true);
  const auto g32 = kernels::layer_norm_backward(f32(dy), f32(x), f32(w), ln32.mean, ln32.rstd, true);
  CHECK(close(g32.dx, g64.dx, 1e-4));
  CHECK(close(g32.dweight, g64.dweight, 1e-4));
  CHECK(close(g32.dbias, g64.dbias, 1e-4));

  const Tensor qkv = random_input({2, 64, 3 * 128}, 44);
  const auto at64 = kernels::causal_attention(qkv, 4);
  const auto at32 = kernels::causal_attention(f32(qkv), 4);
  CHECK(close(at32.y, at64.y, 1e-5));
  CHECK(close(kernels::causal_attention_backward(f32(dy), f32(qkv), at32.att, 4),
              kernels::causal_attention_backward(dy, qkv, at64.att, 4), 1e-4));

  const Tensor h = random_input({2, 64, 512}, 45), dh = random_input({2, 64, 512}, 46);
  CHECK(close(kernels::gelu(f32(h)), kernels::gelu(h), 1e-6));
  CHECK(close(kernels::gelu_backward(f32(dh), f32(h)), kernels::gelu_backward(dh, h), 1e-6));
  CHECK(close(kernels::add(f32(x), f32(b)), kernels::add(x, b), 1e-6));
}
