// Reduction kernels: one loop, instantiated per (dtype, op). The float32/float64/int loops
// vectorize (-O3); integer SUM/PRODUCT wrap modulo 2^bits instead of overflowing.
#include "collectives/reduce/reduce_kernel.h"

#include <type_traits>

#include "collectives/reduce/dtype_dispatch.h"
#include "collectives/reduce/reduce_op.h"

namespace ringgrad::collectives {
namespace {

template <typename T, ReduceOp Op>
void combine_loop(T* dst, const T* a, const T* b, std::size_t count) {
  using C = Compute<T>;
  for (std::size_t i = 0; i < count; ++i) dst[i] = C::store(apply_op<Op>(C::load(a[i]), C::load(b[i])));
}

template <typename T>
void combine_typed(void* dst, const void* a, const void* b, std::size_t count, ReduceOp op) {
  auto* d = static_cast<T*>(dst);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG: return combine_loop<T, ReduceOp::SUM>(d, x, y, count);
    case ReduceOp::PRODUCT: return combine_loop<T, ReduceOp::PRODUCT>(d, x, y, count);
    case ReduceOp::MIN: return combine_loop<T, ReduceOp::MIN>(d, x, y, count);
    case ReduceOp::MAX: return combine_loop<T, ReduceOp::MAX>(d, x, y, count);
  }
}

}  // namespace

void combine(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) {
  visit_dtype(dtype, [&]<typename T>(std::type_identity<T>) { combine_typed<T>(dst, a, b, count, op); });
}

void divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) {
  if (op != ReduceOp::AVG || world_size == 1) return;
  visit_dtype(dtype, [&]<typename T>(std::type_identity<T>) {
    using C = Compute<T>;
    using V = typename C::type;
    auto* d = static_cast<T*>(data);
    const V n = static_cast<V>(world_size);
    for (std::size_t i = 0; i < count; ++i) d[i] = C::store(static_cast<V>(C::load(d[i]) / n));
  });
}

}  // namespace ringgrad::collectives
