// Element-wise reduction kernels, one template instantiated per (dtype, op) pair:
// combine(dst, a, b) = a op b, element by element; float16/bfloat16 go through float32.
#pragma once

#include <cstddef>

#include "collectives/dtype.h"

namespace ringgrad::collectives {

/// dst[i] = a[i] op b[i] for i < count. dst may equal a or b (in place); no other overlap.
/// AVG combines like SUM (the division happens once, in divide_for_avg). Units: elements.
void combine(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op);

/// data[i] /= world_size for AVG (integer division for integer dtypes); a no-op for other ops.
void divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size);

}  // namespace ringgrad::collectives
