// matmul onto GEMM calls: [..., M, K] @ [K, N] folded into one large GEMM, broadcast batches as
// one strided batched GEMM, and a copy only for operands that no BLAS layout can read.
#include "tensor/matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "tensor/cuda_kernels.h"
#include "tensor/gemm.h"
#include "tensor/strided_loop.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

// How the last two dims of a tensor map onto a BLAS matrix: row-major as is, or the
// transpose of a row-major matrix. Anything else (a gap in both directions) needs a copy.
struct Layout {
  bool ok = false;
  bool trans = false;
  std::int64_t ld = 0;
};

Layout matrix_layout(const Tensor& t) {
  const std::int64_t rows = t.size(-2), cols = t.size(-1);
  const std::int64_t rs = t.strides()[t.strides().size() - 2], cs = t.strides().back();
  if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<std::int64_t>(cols, 1))) {
    return {true, false, rows == 1 ? std::max<std::int64_t>(cols, 1) : rs};
  }
  if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<std::int64_t>(rows, 1))) {
    return {true, true, cols == 1 ? std::max<std::int64_t>(rows, 1) : cs};
  }
  return {};
}

// A tensor whose last two dims BLAS can read, copying only when it must.
Tensor blas_ready(const Tensor& t) { return matrix_layout(t).ok ? t : contiguous(t); }

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }
Strides batch_strides(const Strides& s) { return Strides(s.begin(), s.end() - 2); }

// The stride from batch entry i to i + 1 (row-major over `batch`) when t's entries are equally
// spaced, as one strided-batched GEMM needs (0 for a broadcast operand); none otherwise.
std::optional<std::int64_t> uniform_batch_stride(const Tensor& t, const Shape& batch) {
  std::optional<std::int64_t> stride;
  std::int64_t inner = 1;  // entries in the dims after d
  for (std::size_t d = batch.size(); d-- > 0;) {
    if (batch[d] == 1) continue;
    if (!stride) {
      stride = t.strides()[d];
    } else if (t.strides()[d] != *stride * inner) {
      return std::nullopt;
    }
    inner *= batch[d];
  }
  return stride.value_or(0);
}

// All batch entries as one strided batch (a GPU's path): operands whose entries are not
// equally spaced are made contiguous first.
template <typename T>
void matmul_batched(const Tensor& a_in, const Tensor& b_in, const Shape& batch, const Tensor& out) {
  const Tensor a = uniform_batch_stride(a_in, batch) ? a_in : contiguous(a_in);
  const Tensor b = uniform_batch_stride(b_in, batch) ? b_in : contiguous(b_in);
  const Layout la = matrix_layout(a), lb = matrix_layout(b);
  const std::int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  GemmArgs<T> g;
  g.trans_a = la.trans, g.trans_b = lb.trans, g.m = m, g.n = n, g.k = k;
  g.a = a.data<T>(), g.lda = la.ld, g.b = b.data<T>(), g.ldb = lb.ld, g.c = out.data<T>(), g.ldc = n;
  gemm_batched(out.device(), g, {numel(batch), *uniform_batch_stride(a, batch), *uniform_batch_stride(b, batch), m * n});
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (a.dim() < 2 || b.dim() < 2 || a.size(-1) != b.size(-2)) {
    throw std::invalid_argument(fmt::format("matmul: shapes {} and {} do not match",
                                            shape_str(a.shape()), shape_str(b.shape())));
  }
  if (a.dtype() != b.dtype()) {
    throw std::invalid_argument(fmt::format("matmul: dtype mismatch, {} and {}",
                                            dtype_name(a.dtype()), dtype_name(b.dtype())));
  }
#if RINGGRAD_HAVE_CUDA
  cuda::check_same_device("matmul", a, b);
#endif
  const std::int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);

  // [..., M, K] @ [K, N]: fold the batch into M for one large GEMM.
  if (b.dim() == 2 && a.dim() > 2) {
    Shape out_shape = a.shape();
    out_shape.back() = n;
    return view(matmul(reshape(a, {-1, k}), b), out_shape);
  }

  Shape batch = broadcast_shapes(batch_of(a.shape()), batch_of(b.shape()), "matmul");
  Shape a_shape = batch, b_shape = batch, out_shape = batch;
  a_shape.insert(a_shape.end(), {m, k});
  b_shape.insert(b_shape.end(), {k, n});
  out_shape.insert(out_shape.end(), {m, n});
  const Tensor ea = blas_ready(expand(a, a_shape));
  const Tensor eb = blas_ready(expand(b, b_shape));
  Tensor out = Tensor::zeros(out_shape, a.dtype(), a.device());
  if (m == 0 || n == 0 || k == 0 || out.numel() == 0) return out;
  if (out.is_cuda()) {
    dispatch_floating(a.dtype(), "matmul", [&]<typename T>() { matmul_batched<T>(ea, eb, batch, out); });
    return out;
  }

  const Layout la = matrix_layout(ea), lb = matrix_layout(eb);
  dispatch_floating(a.dtype(), "matmul", [&]<typename T>() {
    const T* pa = reinterpret_cast<const T*>(ea.storage()->data());
    const T* pb = reinterpret_cast<const T*>(eb.storage()->data());
    T* pc = out.data<T>();
    // One GEMM per batch index; the strided loop walks the (broadcast) batch dims.
    for_each_row<2>(batch, {batch_strides(ea.strides()), batch_strides(eb.strides())},
                    {ea.offset(), eb.offset()}, [&](auto off, std::int64_t count, auto step) {
                      for (std::int64_t i = 0; i < count; ++i) {
                        GemmArgs<T> g;
                        g.trans_a = la.trans, g.trans_b = lb.trans;
                        g.m = m, g.n = n, g.k = k;
                        g.a = pa + off[0] + i * step[0], g.lda = la.ld;
                        g.b = pb + off[1] + i * step[1], g.ldb = lb.ld;
                        g.c = pc, g.ldc = n;
                        gemm(g);
                        pc += m * n;
                      }
                    });
  });
  return out;
}

}  // namespace ringgrad::kernels
