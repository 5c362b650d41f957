// CUDA twin of view.cc's copy_: one thread per destination element (cuda_launch.h), reading the
// (broadcast) source through its strides and converting the dtype on the way.
#include "tensor/cuda_kernels.h"
#include "tensor/cuda_launch.h"
#include "tensor/view.h"

namespace ringgrad::kernels::cuda {
namespace {

template <typename D, typename S>
struct Copy {
  D* dst;
  ringgrad::cuda::StridedIndex id;
  const S* src;
  ringgrad::cuda::StridedIndex is;
  __device__ void operator()(std::int64_t i) const { dst[id(i)] = static_cast<D>(src[is(i)]); }
};

}  // namespace

void copy_(const Tensor& dst, const Tensor& src) {
  // copy_ is the one kernel that crosses devices (PyTorch's copy_ does): bring src over first.
  const Tensor from = expand(src.device() == dst.device() ? src : src.to(dst.device()), dst.shape());
  using ringgrad::cuda::base;
  using ringgrad::cuda::index_of;
  dispatch_all(dst.dtype(), [&]<typename D>() {
    dispatch_all(from.dtype(), [&]<typename S>() {
      ringgrad::cuda::for_each(dst.device().index, dst.numel(),
                               Copy<D, S>{base<D>(dst), index_of(dst, "copy_"), base<const S>(from), index_of(from, "copy_")});
    });
  });
}

}  // namespace ringgrad::kernels::cuda
