// CUDA twins of index.cc: one thread per element of the result (index_select, gather) or of the
// source (index_add_, scatter_add_, which add with atomicAdd: indices may repeat). The first bad
// index a thread meets is recorded on the GPU and read back after the kernel, so a bad index
// throws the CPU twin's std::out_of_range; that read is one small synchronising copy per call.
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor/cuda_kernels.h"
#include "tensor/cuda_launch.h"
#include "tensor/view.h"

namespace ringgrad::kernels::cuda {
namespace {

using ringgrad::cuda::base;
using ringgrad::cuda::index_of;
using ringgrad::cuda::StridedIndex;

// The GPU side of a bounds check: slot[0] is set once, by the first thread to find a bad index,
// which then writes the index to slot[1].
struct BadIndex {
  unsigned long long* slot;
  __device__ bool in_range(std::int64_t i, std::int64_t size) const {
    if (i >= 0 && i < size) return true;
    if (atomicCAS(&slot[0], 0ULL, 1ULL) == 0ULL) slot[1] = static_cast<unsigned long long>(i);
    return false;
  }
};

// The host side: two zeroed int64 on the GPU, read back once the kernels are queued.
class IndexCheck {
 public:
  explicit IndexCheck(Device device) : slots_(Tensor::zeros({2}, DType::Int64, device)) {}
  BadIndex on_device() const { return {reinterpret_cast<unsigned long long*>(slots_.data<std::int64_t>())}; }
  /// Waits for the kernels and throws std::out_of_range if one met an index outside [0, size).
  void throw_if_bad(const char* op, std::int64_t size) const {
    const std::vector<std::int64_t> slots = slots_.to_vector<std::int64_t>();
    if (slots[0] != 0) {
      throw std::out_of_range(std::string(op) + ": index " + std::to_string(slots[1]) + " is out of range for size " +
                              std::to_string(size));
    }
  }

 private:
  Tensor slots_;
};

template <typename T>
__device__ void atomic_add(T* at, T value) {
  if constexpr (std::is_same_v<T, std::int64_t>) {  // two's complement: the unsigned add is the same
    atomicAdd(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(value));
  } else {
    atomicAdd(at, value);  // float and double (sm_60 and later)
  }
}

// out[i, j] = table[ids[i], j] for contiguous out [I, row] and table [rows, row]; e = i * row + j.
template <typename T>
struct IndexSelect {
  T* out;
  const T* table;
  const std::int64_t* ids;
  std::int64_t row, rows;
  BadIndex bad;
  __device__ void operator()(std::int64_t e) const {
    const std::int64_t k = ids[e / row];
    if (bad.in_range(k, rows)) out[e] = table[k * row + e % row];
  }
};

// dst[ids[i], j] += src[i, j] for contiguous dst [rows, row] and src [I, row].
template <typename T>
struct IndexAdd {
  T* dst;
  const T* src;
  const std::int64_t* ids;
  std::int64_t row, rows;
  BadIndex bad;
  __device__ void operator()(std::int64_t e) const {
    const std::int64_t k = ids[e / row];
    if (bad.in_range(k, rows)) atomic_add(&dst[k * row + e % row], src[e]);
  }
};

// Element p (row-major over index's shape) of gather/scatter: `walk` finds other's element with
// p's coordinates except along dim, where the index value k steps by `stride` (other's along dim).
struct AlongDim {
  StridedIndex walk, index;
  const std::int64_t* ids;
  std::int64_t size, stride;
  BadIndex bad;
  /// other's element for p, or -1 for a bad index.
  __device__ std::int64_t at(std::int64_t p) const {
    const std::int64_t k = ids[index(p)];
    return bad.in_range(k, size) ? walk(p) + k * stride : -1;
  }
};

template <typename T>
struct Gather {
  T* out;  // contiguous, index's shape
  const T* input;
  AlongDim along;
  __device__ void operator()(std::int64_t p) const {
    const std::int64_t at = along.at(p);
    if (at >= 0) out[p] = input[at];
  }
};

template <typename T>
struct ScatterAdd {
  T* dst;
  const T* src;
  StridedIndex is;
  AlongDim along;
  __device__ void operator()(std::int64_t p) const {
    const std::int64_t at = along.at(p);
    if (at >= 0) atomic_add(&dst[at], src[is(p)]);
  }
};

// The walk through `other` for gather/scatter_add_ along dim d with `index`.
AlongDim along_dim(const Tensor& other, std::int64_t d, const Tensor& index, const IndexCheck& check, const char* op) {
  Strides walk = other.strides();
  walk[static_cast<std::size_t>(d)] = 0;  // along dim the index value decides, not the position
  const Tensor walked(other.storage(), index.shape(), walk, other.offset(), other.dtype());
  return {index_of(walked, op), index_of(index, op), base<const std::int64_t>(index), other.size(d),
          other.strides()[static_cast<std::size_t>(d)], check.on_device()};
}

}  // namespace

Tensor index_select(const Tensor& table, const Tensor& index) {
  check_same_device("index_select", table, index);
  const Tensor rows = contiguous(table);
  const Tensor idx = contiguous(index);
  Shape shape = index.shape();
  shape.insert(shape.end(), table.shape().begin() + 1, table.shape().end());
  Tensor out = Tensor::empty(shape, table.dtype(), table.device());
  const std::int64_t row = numel(Shape(table.shape().begin() + 1, table.shape().end()));  // > 0 if out is not empty
  const IndexCheck check(table.device());
  dispatch_all(table.dtype(), [&]<typename T>() {
    ringgrad::cuda::for_each(table.device().index, out.numel(),
                             IndexSelect<T>{out.data<T>(), rows.data<T>(), idx.data<std::int64_t>(), row, table.size(0),
                                            check.on_device()});
  });
  check.throw_if_bad("index_select", table.size(0));
  return out;
}

void index_add_(const Tensor& dst, const Tensor& index, const Tensor& src) {
  check_same_device("index_add_", dst, index);
  check_same_device("index_add_", dst, src);
  const std::int64_t row = dst.size(0) == 0 ? 0 : dst.numel() / dst.size(0);
  const IndexCheck check(dst.device());
  dispatch_floating(dst.dtype(), "index_add_", [&]<typename T>() {
    ringgrad::cuda::for_each(dst.device().index, src.numel(),
                             IndexAdd<T>{dst.data<T>(), src.data<T>(), index.data<std::int64_t>(), row, dst.size(0),
                                         check.on_device()});
  });
  check.throw_if_bad("index_add_", dst.size(0));
}

Tensor gather(const Tensor& input, std::int64_t dim, const Tensor& index) {
  check_same_device("gather", input, index);
  Tensor out = Tensor::empty(index.shape(), input.dtype(), input.device());
  const IndexCheck check(input.device());
  const AlongDim along = along_dim(input, dim, index, check, "gather");
  dispatch_all(input.dtype(), [&]<typename T>() {
    ringgrad::cuda::for_each(input.device().index, out.numel(), Gather<T>{out.data<T>(), base<const T>(input), along});
  });
  check.throw_if_bad("gather", input.size(dim));
  return out;
}

void scatter_add_(const Tensor& dst, std::int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device("scatter_add_", dst, index);
  check_same_device("scatter_add_", dst, src);
  const IndexCheck check(dst.device());
  const AlongDim along = along_dim(dst, dim, index, check, "scatter_add_");
  dispatch_all(dst.dtype(), [&]<typename T>() {
    if (src.dtype() != dst.dtype()) throw std::invalid_argument("scatter_add_: source and destination dtypes differ");
    ringgrad::cuda::for_each(dst.device().index, index.numel(),
                             ScatterAdd<T>{base<T>(dst), base<const T>(src), index_of(src, "scatter_add_"), along});
  });
  check.throw_if_bad("scatter_add_", dst.size(dim));
}

}  // namespace ringgrad::kernels::cuda
