#include "tensor/op_profile.h"

namespace ringgrad::profile {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::Matmul: return "matmul";
    case OpKind::Attention: return "attention";
    case OpKind::LayerNorm: return "layer_norm";
    case OpKind::Optimizer: return "optimizer";
  }
  return "?";
}

}  // namespace ringgrad::profile
