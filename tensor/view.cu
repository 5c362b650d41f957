// CUDA twin of view.cc's copy_: one thread per destination element, reading the (broadcast)
// source through its strides and converting the dtype on the way.
#include "tensor/cuda_common.h"
#include "tensor/cuda_indexing.h"
#include "tensor/cuda_kernels.h"
#include "tensor/view.h"

namespace ringgrad::kernels::cuda {
namespace {

template <typename D, typename S>
__global__ void copy_kernel(D* dst, ringgrad::cuda::StridedIndex dst_index, const S* src,
                            ringgrad::cuda::StridedIndex src_index, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    dst[dst_index(i)] = static_cast<D>(src[src_index(i)]);
  }
}

}  // namespace

void copy_(const Tensor& dst, const Tensor& src) {
  // copy_ is the one kernel that crosses devices (PyTorch's copy_ does): bring src over first.
  const Tensor from = expand(src.device() == dst.device() ? src : src.to(dst.device()), dst.shape());
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  const int device = dst.device().index;
  ringgrad::cuda::DeviceGuard guard(device);
  const auto di = ringgrad::cuda::strided_index(dst.shape(), dst.strides(), dst.offset(), "copy_");
  const auto si = ringgrad::cuda::strided_index(from.shape(), from.strides(), from.offset(), "copy_");
  dispatch_all(dst.dtype(), [&]<typename D>() {
    dispatch_all(from.dtype(), [&]<typename S>() {
      copy_kernel<<<ringgrad::cuda::blocks_for(n), ringgrad::cuda::kThreads, 0, ringgrad::cuda::stream(device)>>>(
          reinterpret_cast<D*>(dst.storage()->data()), di, reinterpret_cast<const S*>(from.storage()->data()), si, n);
    });
  });
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ringgrad::kernels::cuda
