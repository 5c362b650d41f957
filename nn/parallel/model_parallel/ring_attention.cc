// Ring attention: the blockwise online-softmax forward and the matching backward. Each step posts
// the exchange of the block in hand (batch_isend_irecv: send to r+1, receive from r-1), computes
// with that block while the communicator's worker thread moves it, then waits. On a timeline each
// block's compute is a span (category "ring_attention") and each transfer one ("transfer").
#include "nn/parallel/model_parallel/ring_attention.h"

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "autograd/node.h"
#include "trace/trace.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Buffer;
using collectives::Communicator;
using collectives::DType;
using collectives::P2POp;
using collectives::Work;

constexpr uint64_t kKvTag = 0x7219, kGradTag = 0x721a;

struct Dims {
  std::int64_t b, t, c, h, hs;  // t: this rank's positions
  double scale;
};

// What the forward keeps for the backward.
struct Saved {
  Dims d;
  std::vector<double> qkv, y, lse;  // lse: [B, H, t]
};

// A block in flight around the ring: the exchange's Work and, while tracing, when it was posted.
// wait() blocks until it arrived and records its span, posted to arrived, on the timeline's
// "ring attention transfers" row (the flight record keeps collectives, not point-to-point).
class Pass {
 public:
  Pass() = default;  // nothing in flight
  Pass(Work work, const char* what, double posted_us) : work_(std::move(work)), what_(what), posted_us_(posted_us) {}
  void wait() {
    work_.wait();
    if (posted_us_ >= 0)
      trace::record(what_, "transfer", trace::named_row("ring attention transfers"), posted_us_,
                    work_.completed_at() * 1e6);
    posted_us_ = -1;
  }

 private:
  Work work_;
  const char* what_ = "";
  double posted_us_ = -1;
};

// Posts the send of `out` to the next rank and the receive of the previous rank's block into
// `in` (batch_isend_irecv); neither may be written until the Pass is waited for.
Pass pass_along(std::vector<double>& out, std::vector<double>& in, Communicator& group, uint64_t tag, const char* what) {
  const int p = group.world_size(), r = group.rank();
  const double posted_us = trace::enabled() ? trace::now_us() : -1;
  Work work = group.batch_isend_irecv({P2POp::send(Buffer{out.data(), out.size(), DType::kFloat64}, (r + 1) % p),
                                       P2POp::recv(Buffer{in.data(), in.size(), DType::kFloat64}, (r + p - 1) % p)},
                                      tag);
  return Pass(std::move(work), what, posted_us);
}

// Which keys of block `src` query row i may attend to: all (earlier block), j <= i (own), none.
std::int64_t keys_visible(int src, int rank, std::int64_t i, std::int64_t t) {
  return src < rank ? t : src == rank ? i + 1 : 0;
}

// kv holds block src's [B, t, 2C], k then v: element (b, j, part, channel) at
// ((b t + j) 2C + part C + channel); its gradient dkv has the same layout.
void forward_block(const Dims& d, const std::vector<double>& qkv, const std::vector<double>& kv, int src, int rank,
                   std::vector<double>& m, std::vector<double>& l, std::vector<double>& o) {
  const std::int64_t width = 2 * d.c;
  std::vector<double> s(static_cast<std::size_t>(d.t));
  for (std::int64_t b = 0; b < d.b; ++b)
    for (std::int64_t h = 0; h < d.h; ++h)
      for (std::int64_t i = 0; i < d.t; ++i) {
        const std::int64_t n = keys_visible(src, rank, i, d.t);
        if (n == 0) continue;
        const double* q = &qkv[static_cast<std::size_t>((b * d.t + i) * 3 * d.c + h * d.hs)];
        double block_max = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < n; ++j) {
          const double* k = &kv[static_cast<std::size_t>((b * d.t + j) * width + h * d.hs)];
          double dot = 0;
          for (std::int64_t e = 0; e < d.hs; ++e) dot += q[e] * k[e];
          s[static_cast<std::size_t>(j)] = dot * d.scale;
          block_max = std::max(block_max, s[static_cast<std::size_t>(j)]);
        }
        const std::size_t row = static_cast<std::size_t>((b * d.h + h) * d.t + i);
        const double m_new = std::max(m[row], block_max), correction = std::exp(m[row] - m_new);
        double* out = &o[row * static_cast<std::size_t>(d.hs)];
        l[row] *= correction;
        for (std::int64_t e = 0; e < d.hs; ++e) out[e] *= correction;
        for (std::int64_t j = 0; j < n; ++j) {
          const double w = std::exp(s[static_cast<std::size_t>(j)] - m_new);
          const double* v = &kv[static_cast<std::size_t>((b * d.t + j) * width + d.c + h * d.hs)];
          l[row] += w;
          for (std::int64_t e = 0; e < d.hs; ++e) out[e] += w * v[e];
        }
        m[row] = m_new;
      }
}

// Adds this rank's queries' share of block src's gradient: dq into dqkv, dk and dv into dkv.
void backward_block(const Saved& sv, const std::vector<double>& dy, const std::vector<double>& dsum,
                    const std::vector<double>& kv, int src, int rank, std::vector<double>& dkv,
                    std::vector<double>& dqkv) {
  const Dims& d = sv.d;
  const std::int64_t width = 2 * d.c;
  for (std::int64_t b = 0; b < d.b; ++b)
    for (std::int64_t h = 0; h < d.h; ++h)
      for (std::int64_t i = 0; i < d.t; ++i) {
        const std::int64_t n = keys_visible(src, rank, i, d.t);
        const std::size_t row = static_cast<std::size_t>((b * d.h + h) * d.t + i);
        const double* q = &sv.qkv[static_cast<std::size_t>((b * d.t + i) * 3 * d.c + h * d.hs)];
        const double* g = &dy[static_cast<std::size_t>((b * d.t + i) * d.c + h * d.hs)];
        double* dq = &dqkv[static_cast<std::size_t>((b * d.t + i) * 3 * d.c + h * d.hs)];
        for (std::int64_t j = 0; j < n; ++j) {
          const std::size_t at = static_cast<std::size_t>((b * d.t + j) * width + h * d.hs);
          const double *k = &kv[at], *v = &kv[at + static_cast<std::size_t>(d.c)];
          double *dk = &dkv[at], *dv = &dkv[at + static_cast<std::size_t>(d.c)];
          double dot = 0, dp = 0;
          for (std::int64_t e = 0; e < d.hs; ++e) {
            dot += q[e] * k[e];
            dp += g[e] * v[e];
          }
          const double p = std::exp(dot * d.scale - sv.lse[row]), ds = p * (dp - dsum[row]) * d.scale;
          for (std::int64_t e = 0; e < d.hs; ++e) {
            dv[e] += p * g[e];
            dq[e] += ds * k[e];
            dk[e] += ds * q[e];
          }
        }
      }
}

std::vector<double> as_doubles(const Tensor& t) {
  return kernels::to_dtype(kernels::contiguous(t.detach()), ringgrad::DType::Float64).to_vector<double>();
}

// This rank's k and v, [B, t, 2C], out of its qkv [B, t, 3C]: the block it starts the ring with.
std::vector<double> own_kv(const Dims& d, const std::vector<double>& qkv) {
  std::vector<double> kv(static_cast<std::size_t>(d.b * d.t * 2 * d.c));
  for (std::int64_t bt = 0; bt < d.b * d.t; ++bt)
    for (std::int64_t e = 0; e < 2 * d.c; ++e)
      kv[static_cast<std::size_t>(bt * 2 * d.c + e)] = qkv[static_cast<std::size_t>(bt * 3 * d.c + d.c + e)];
  return kv;
}

// The backward: D = rowsum(dY Y), then two rings. The k, v blocks travel as in the forward, each
// sent on before it is used. Each block's gradient (dk, dv) travels one step behind: this rank
// adds its share to the sum that arrived from r-1 and sends it on to r+1, while the next block
// computes; after p sends every block's gradient is home.
Tensor ring_backward(const Saved& sv, const Tensor& grad, Communicator& group, ringgrad::DType dtype) {
  const Dims& d = sv.d;
  const int p = group.world_size(), r = group.rank();
  const std::vector<double> dy = as_doubles(grad);
  std::vector<double> dsum(sv.lse.size(), 0), dqkv(sv.qkv.size(), 0);
  for (std::int64_t b = 0; b < d.b; ++b)
    for (std::int64_t h = 0; h < d.h; ++h)
      for (std::int64_t i = 0; i < d.t; ++i)
        for (std::int64_t e = 0; e < d.hs; ++e) {
          const std::size_t at = static_cast<std::size_t>((b * d.t + i) * d.c + h * d.hs + e);
          dsum[static_cast<std::size_t>((b * d.h + h) * d.t + i)] += dy[at] * sv.y[at];
        }
  std::vector<double> kv = own_kv(d, sv.qkv), kv_next(kv.size());
  // mine: this rank's share of the block in hand; sum_out: the running sum being sent to r+1;
  // sum_in: the one arriving from r-1 (after the last step: this rank's own block, complete).
  std::vector<double> mine(kv.size()), sum_out(kv.size()), sum_in(kv.size());
  Pass grad_pass;
  for (int step = 0; step < p; ++step) {
    Pass kv_pass = step < p - 1 ? pass_along(kv, kv_next, group, kKvTag, "k, v block") : Pass{};
    std::fill(mine.begin(), mine.end(), 0.0);
    {
      const trace::Span span("block backward", "ring_attention");
      backward_block(sv, dy, dsum, kv, (r - step + p) % p, r, mine, dqkv);
    }
    grad_pass.wait();  // the previous step's: sum_in holds the sum for this block, sum_out is free
    if (step > 0)
      for (std::size_t e = 0; e < mine.size(); ++e) mine[e] = sum_in[e] + mine[e];
    sum_out.swap(mine);
    if (p > 1) grad_pass = pass_along(sum_out, sum_in, group, kGradTag, "dk, dv sum");
    kv_pass.wait();
    kv.swap(kv_next);
  }
  grad_pass.wait();
  const std::vector<double>& home = p > 1 ? sum_in : sum_out;
  for (std::int64_t bt = 0; bt < d.b * d.t; ++bt)
    for (std::int64_t e = 0; e < 2 * d.c; ++e)
      dqkv[static_cast<std::size_t>(bt * 3 * d.c + d.c + e)] = home[static_cast<std::size_t>(bt * 2 * d.c + e)];
  return kernels::to_dtype(Tensor::from_vector(dqkv, {d.b, d.t, 3 * d.c}), dtype);
}

}  // namespace

Tensor ring_attention(const Tensor& qkv, std::int64_t n_head, Communicator& group) {
  if (qkv.dim() != 3 || qkv.size(2) % 3 != 0 || n_head < 1 || (qkv.size(2) / 3) % n_head != 0)
    throw std::invalid_argument(fmt::format("ring_attention on rank {}: need qkv [B, T/c, 3C] with C divisible by "
                                            "n_head {}, got {}", group.rank(), n_head, shape_str(qkv.shape())));
  auto sv = std::make_shared<Saved>();
  Dims& d = sv->d;
  d = {qkv.size(0), qkv.size(1), qkv.size(2) / 3, n_head, qkv.size(2) / 3 / n_head, 0};
  d.scale = 1 / std::sqrt(static_cast<double>(d.hs));
  sv->qkv = as_doubles(qkv);
  const int p = group.world_size(), r = group.rank();
  const auto rows = static_cast<std::size_t>(d.b * d.h * d.t);
  std::vector<double> m(rows, -std::numeric_limits<double>::infinity()), l(rows, 0), o(rows * static_cast<std::size_t>(d.hs), 0);
  std::vector<double> kv = own_kv(d, sv->qkv), kv_next(kv.size());
  for (int step = 0; step < p; ++step) {
    Pass kv_pass = step < p - 1 ? pass_along(kv, kv_next, group, kKvTag, "k, v block") : Pass{};
    {
      const trace::Span span("block forward", "ring_attention");
      forward_block(d, sv->qkv, kv, (r - step + p) % p, r, m, l, o);
    }
    kv_pass.wait();
    kv.swap(kv_next);
  }
  sv->y.assign(static_cast<std::size_t>(d.b * d.t * d.c), 0);
  sv->lse.assign(rows, 0);
  for (std::int64_t b = 0; b < d.b; ++b)
    for (std::int64_t h = 0; h < d.h; ++h)
      for (std::int64_t i = 0; i < d.t; ++i) {
        const std::size_t row = static_cast<std::size_t>((b * d.h + h) * d.t + i);
        sv->lse[row] = m[row] + std::log(l[row]);
        for (std::int64_t e = 0; e < d.hs; ++e)
          sv->y[static_cast<std::size_t>((b * d.t + i) * d.c + h * d.hs + e)] = o[row * static_cast<std::size_t>(d.hs) + static_cast<std::size_t>(e)] / l[row];
      }
  const Tensor y = kernels::to_dtype(Tensor::from_vector(sv->y, {d.b, d.t, d.c}), qkv.dtype());
  return autograd::record("ring_attention", y, {qkv}, [sv, &group, dtype = qkv.dtype()](const Tensor& grad) {
    return std::vector<Tensor>{ring_backward(*sv, grad, group, dtype)};
  });
}

}  // namespace ringgrad::nn::parallel
