// layer_norm, causal self-attention and dropout as graph nodes. Each forward saves only what its
// hand-written backward reads: the per-row mean and 1/std, the attention probabilities, the mask.
#include "autograd/transformer_ops.h"

#include "autograd/node.h"
#include "tensor/attention.h"
#include "tensor/dropout.h"
#include "tensor/elementwise.h"
#include "tensor/layer_norm.h"
#include "tensor/op_profile.h"
#include "tensor/qk_norm.h"
#include "tensor/rotary.h"

namespace ringgrad {

namespace k = kernels;
using autograd::record;
using profile::OpKind;
using profile::ProfileScope;

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  ProfileScope scope(OpKind::LayerNorm);
  k::LayerNormOutput out = k::layer_norm(x, weight, bias, eps);
  return record("layer_norm", out.y, {x, weight, bias},
                [x = x.detach(), w = weight.detach(), mean = out.mean, rstd = out.rstd,
                 has_bias = bias.defined()](const Tensor& g) {
                  ProfileScope backward_scope(OpKind::LayerNorm);
                  k::LayerNormGrads grads = k::layer_norm_backward(g, x, w, mean, rstd, has_bias);
                  return std::vector<Tensor>{grads.dx, grads.dweight, grads.dbias};
                });
}

Tensor causal_self_attention(const Tensor& qkv, std::int64_t n_head) {
  ProfileScope scope(OpKind::Attention);
  k::AttentionOutput out = k::causal_attention(qkv, n_head);
  return record("causal_self_attention", out.y, {qkv}, [qkv = qkv.detach(), att = out.att, n_head](const Tensor& g) {
    ProfileScope backward_scope(OpKind::Attention);
    return std::vector<Tensor>{k::causal_attention_backward(g, qkv, att, n_head)};
  });
}

Tensor rotary_qk(const Tensor& qkv, std::int64_t n_head, std::int64_t offset) {
  return record("rotary", k::rotary(qkv, n_head, false, offset), {qkv}, [n_head, offset](const Tensor& g) {
    return std::vector<Tensor>{k::rotary(g, n_head, true, offset)};
  });
}

Tensor qk_norm(const Tensor& qkv, std::int64_t n_head) {
  return record("qk_norm", k::qk_norm(qkv, n_head), {qkv}, [qkv = qkv.detach(), n_head](const Tensor& g) {
    return std::vector<Tensor>{k::qk_norm_backward(g, qkv, n_head)};
  });
}

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!training || p == 0) return x;
  const Tensor mask = k::dropout_mask(x.shape(), p, x.dtype(), gen, x.device());
  return record("dropout", k::mul(x, mask), {x}, [mask](const Tensor& g) {
    return std::vector<Tensor>{k::mul(g, mask)};
  });
}

}  // namespace ringgrad
