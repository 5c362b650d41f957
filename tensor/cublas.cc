// cuBLAS for the tensor library: the library loaded at first use, one handle per GPU bound to
// the tensor stream, and the one place where ringgrad's row-major GEMMs become cuBLAS's
// column-major ones. At bf16 precision the operands are converted to bf16 buffers first, or come
// converted (gemm_batched_bfloat16).
#include "tensor/cublas.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <array>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tensor/cuda_buffer.h"
#include "tensor/cuda_common.h"
#include "tensor/cuda_runtime.h"
#include "tensor/precision.h"

namespace ringgrad::cuda {
namespace {

// cuBLAS's entry points. The library is opened by hand at the first GPU GEMM, as OpenBLAS is
// (openblas.cc): linked, its 600 MB (with cuBLASLt) would be mapped and relocated in every
// program at start, adding some 200 MB to the resident memory of CPU-only runs.
struct Cublas {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetWorkspace_v2) set_workspace;
  // Named by its type: the header overloads this one (a deprecated cudaDataType variant).
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                            const void*, const void*, cudaDataType, int, long long, const void*,
                                            cudaDataType, int, long long, const void*, void*, cudaDataType, int,
                                            long long, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
};

// The entry points, or the reason they are missing; loaded once per process, thread-safely.
struct Loaded {
  Cublas api{};
  std::string error;
};

Loaded load() {
  Loaded loaded;
  void* lib = dlopen(RINGGRAD_CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return {{}, dlerror()};
  auto get = [&]<typename F>(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(lib, name));
    if (f == nullptr) loaded.error = std::string("no ") + name;
  };
  Cublas& c = loaded.api;
  get(c.create, "cublasCreate_v2");
  get(c.destroy, "cublasDestroy_v2");
  get(c.set_stream, "cublasSetStream_v2");
  get(c.set_workspace, "cublasSetWorkspace_v2");
  get(c.gemm_strided_batched_ex, "cublasGemmStridedBatchedEx");
  get(c.status_name, "cublasGetStatusName");
  get(c.status_string, "cublasGetStatusString");
  return loaded;
}

const Cublas& cublas() {
  static const Loaded loaded = load();
  if (!loaded.error.empty()) {
    throw std::runtime_error(fmt::format("cuBLAS could not be loaded from {}: {}", RINGGRAD_CUBLAS_LIBRARY, loaded.error));
  }
  return loaded.api;
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(
        fmt::format("{}: {} ({})", what, cublas().status_name(status), cublas().status_string(status)));
  }
}
#define RINGGRAD_CUBLAS_CHECK(expr) check_cublas((expr), #expr)

// A cuBLAS handle on one GPU. Its stream is the tensor stream, so GEMMs are ordered with every
// other kernel; its workspace comes from the caching allocator (cuBLAS would otherwise
// cudaMalloc one of its own).
class Handle {
 public:
  explicit Handle(int device) : workspace_(static_cast<std::int64_t>(kWorkspaceBytes), device) {
    DeviceGuard guard(device);
    RINGGRAD_CUBLAS_CHECK(cublas().create(&handle_));
    RINGGRAD_CUBLAS_CHECK(cublas().set_stream(handle_, stream(device)));
    RINGGRAD_CUBLAS_CHECK(cublas().set_workspace(handle_, workspace_.data(), kWorkspaceBytes));
  }
  ~Handle() { cublas().destroy(handle_); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  static constexpr std::size_t kWorkspaceBytes = 32 << 20;  // what PyTorch gives cuBLAS on Hopper
  DeviceArray<std::byte> workspace_;
  cublasHandle_t handle_ = nullptr;
};

cublasHandle_t handle(int device) {
  constexpr int kMaxDevices = 64;
  static std::array<std::unique_ptr<Handle>, kMaxDevices> handles;
  static std::mutex mutex;
  if (device < 0 || device >= kMaxDevices) throw std::invalid_argument(fmt::format("cublas: bad device {}", device));
  std::lock_guard lock(mutex);
  if (!handles[device]) handles[device] = std::make_unique<Handle>(device);
  return handles[device]->get();
}

// What cuBLAS needs to know about the element types of one call.
struct Types {
  cudaDataType ab, c;
  cublasComputeType_t compute;
};

// The row-major batch C = alpha op(A) op(B) + beta C, with A and B at `a` and `b` (of type
// types.ab; g's own a and b are ignored). cuBLAS is column-major, and a row-major R x C matrix
// with row stride ld is, read column-major, its C x R transpose with leading dimension ld. So
// row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first, N and
// M swapped, and each operand's own transpose flag; no data moves.
template <typename T>
void column_major_gemm(int device, const kernels::GemmArgs<T>& g, const kernels::GemmBatch& batch, const void* a,
                       const void* b, Types types, const void* alpha, const void* beta) {
  auto op = [](bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; };
  auto i32 = [](std::int64_t v) { return static_cast<int>(v); };  // sizes stay far below 2^31
  DeviceGuard guard(device);
  RINGGRAD_CUBLAS_CHECK(cublas().gemm_strided_batched_ex(
      handle(device), op(g.trans_b), op(g.trans_a), i32(g.n), i32(g.m), i32(g.k), alpha, b, types.ab, i32(g.ldb),
      batch.stride_b, a, types.ab, i32(g.lda), batch.stride_a, beta, g.c, types.c, i32(g.ldc), batch.stride_c,
      i32(batch.count), types.compute, CUBLAS_GEMM_DEFAULT));
}

// One operand in bf16: its span (the elements it reads, in every batch entry) converted.
DeviceArray<std::uint16_t> bfloat16_copy(const float* x, std::int64_t span, std::int64_t count, std::int64_t stride,
                                         int device) {
  const std::int64_t n = span + (count - 1) * stride;
  DeviceArray<std::uint16_t> copy(n, device);
  to_bfloat16(x, copy.data(), n, device);
  return copy;
}

}  // namespace

template <typename T>
void gemm_batched(int device, const kernels::GemmArgs<T>& g, const kernels::GemmBatch& batch) {
  if (g.m == 0 || g.n == 0 || batch.count == 0) return;
  if constexpr (std::is_same_v<T, double>) {
    column_major_gemm(device, g, batch, g.a, g.b, {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F}, &g.alpha, &g.beta);
  } else if (matmul_precision() == MatmulPrecision::kFloat32 || g.k == 0) {
    // CUBLAS_COMPUTE_32F is float32 throughout: TF32 tensor cores only with _FAST_TF32.
    column_major_gemm(device, g, batch, g.a, g.b, {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F}, &g.alpha, &g.beta);
  } else {
    // Strides of the batch are kept, so a stride-0 operand is converted once.
    const auto a = bfloat16_copy(g.a, kernels::span_a(g), batch.count, batch.stride_a, device);
    const auto b = bfloat16_copy(g.b, kernels::span_b(g), batch.count, batch.stride_b, device);
    gemm_batched_bfloat16(device, g, a.data(), b.data(), batch);
  }
}

void gemm_batched_bfloat16(int device, const kernels::GemmArgs<float>& g, const std::uint16_t* a,
                           const std::uint16_t* b, const kernels::GemmBatch& batch) {
  if (g.m == 0 || g.n == 0 || batch.count == 0) return;
  column_major_gemm(device, g, batch, a, b, {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F}, &g.alpha, &g.beta);
}

template void gemm_batched(int, const kernels::GemmArgs<float>&, const kernels::GemmBatch&);
template void gemm_batched(int, const kernels::GemmArgs<double>&, const kernels::GemmBatch&);

}  // namespace ringgrad::cuda
