// Ring attention: the blockwise online-softmax forward and the matching backward, each block
// of keys and values (and in backward their gradients) travelling the ring by batched send/recv.
#include "nn/parallel/ring_attention.h"

#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "autograd/node.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Buffer;
using collectives::Communicator;
using collectives::DType;
using collectives::P2POp;

constexpr uint64_t kTag = 0x7219;

struct Dims {
  std::int64_t b, t, c, h, hs;  // t: this rank's positions
  double scale;
};

// What the forward keeps for the backward.
struct Saved {
  Dims d;
  std::vector<double> qkv, y, lse;  // lse: [B, H, t]
};

// Sends `out` to the next rank while receiving the previous rank's into `in`.
void pass_along(std::vector<double>& out, std::vector<double>& in, Communicator& group) {
  const int p = group.world_size(), r = group.rank();
  group.batch_send_recv({P2POp::send(Buffer{out.data(), out.size(), DType::kFloat64}, (r + 1) % p),
                         P2POp::recv(Buffer{in.data(), in.size(), DType::kFloat64}, (r + p - 1) % p)},
                        kTag);
  out.swap(in);
}

// Which keys of block `src` query row i may attend to: all (earlier block), j <= i (own), none.
std::int64_t keys_visible(int src, int rank, std::int64_t i, std::int64_t t) {
  return src < rank ? t : src == rank ? i + 1 : 0;
}

// kv holds [B, t, 2C] (k then v) or, in backward, [B, t, 4C] (k, v, dk, dv): element (b, j,
// part, channel) at ((b t + j) width + part C + channel).
void forward_block(const Dims& d, const std::vector<double>& qkv, const std::vector<double>& kv, std::int64_t width,
                   int src, int rank, std::vector<double>& m, std::vector<double>& l, std::vector<double>& o) {
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

void backward_block(const Saved& sv, const std::vector<double>& dy, const std::vector<double>& dsum,
                    std::vector<double>& carry, int src, int rank, std::vector<double>& dqkv) {
  const Dims& d = sv.d;
  const std::int64_t width = 4 * d.c;
  for (std::int64_t b = 0; b < d.b; ++b)
    for (std::int64_t h = 0; h < d.h; ++h)
      for (std::int64_t i = 0; i < d.t; ++i) {
        const std::int64_t n = keys_visible(src, rank, i, d.t);
        const std::size_t row = static_cast<std::size_t>((b * d.h + h) * d.t + i);
        const double* q = &sv.qkv[static_cast<std::size_t>((b * d.t + i) * 3 * d.c + h * d.hs)];
        const double* g = &dy[static_cast<std::size_t>((b * d.t + i) * d.c + h * d.hs)];
        double* dq = &dqkv[static_cast<std::size_t>((b * d.t + i) * 3 * d.c + h * d.hs)];
        for (std::int64_t j = 0; j < n; ++j) {
          double* kvj = &carry[static_cast<std::size_t>((b * d.t + j) * width)];
          const double *k = kvj + h * d.hs, *v = kvj + d.c + h * d.hs;
          double *dk = kvj + 2 * d.c + h * d.hs, *dv = kvj + 3 * d.c + h * d.hs;
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

// The backward: D = rowsum(dY Y), then the carry (k, v, dk, dv) around the ring.
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
  // The carry: this rank's k, v and their gradients so far, [B, t, 4C]; after p passes it is home.
  std::vector<double> carry(static_cast<std::size_t>(d.b * d.t * 4 * d.c), 0), incoming(carry.size());
  for (std::int64_t bt = 0; bt < d.b * d.t; ++bt)
    for (std::int64_t e = 0; e < 2 * d.c; ++e)
      carry[static_cast<std::size_t>(bt * 4 * d.c + e)] = sv.qkv[static_cast<std::size_t>(bt * 3 * d.c + d.c + e)];
  for (int step = 0; step < p; ++step) {
    backward_block(sv, dy, dsum, carry, (r - step + p) % p, r, dqkv);
    if (p > 1) pass_along(carry, incoming, group);
  }
  for (std::int64_t bt = 0; bt < d.b * d.t; ++bt)
    for (std::int64_t e = 0; e < 2 * d.c; ++e)
      dqkv[static_cast<std::size_t>(bt * 3 * d.c + d.c + e)] = carry[static_cast<std::size_t>(bt * 4 * d.c + 2 * d.c + e)];
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
  // This rank's k and v, [B, t, 2C], to start the ring.
  std::vector<double> kv(static_cast<std::size_t>(d.b * d.t * 2 * d.c)), incoming(kv.size());
  for (std::int64_t bt = 0; bt < d.b * d.t; ++bt)
    for (std::int64_t e = 0; e < 2 * d.c; ++e)
      kv[static_cast<std::size_t>(bt * 2 * d.c + e)] = sv->qkv[static_cast<std::size_t>(bt * 3 * d.c + d.c + e)];
  for (int step = 0; step < p; ++step) {
    forward_block(d, sv->qkv, kv, 2 * d.c, (r - step + p) % p, r, m, l, o);
    if (step < p - 1) pass_along(kv, incoming, group);
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
