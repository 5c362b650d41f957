// cuda_runtime.h for a build without CUDA: no GPU is ever visible, so no tensor can be placed
// on one, and asking for device memory says why.
#include <stdexcept>
#include <string>

#include "tensor/cuda_runtime.h"

namespace ringgrad::cuda {
namespace {
constexpr const char* kReason = "ringgrad was built without CUDA (RINGGRAD_CUDA=OFF or no nvcc found)";
[[noreturn]] void unavailable() { throw std::runtime_error(kReason); }
}  // namespace

int device_count() { return 0; }
std::string unavailable_reason() { return kReason; }
void* allocate(std::size_t, int device, bool) {
  throw std::runtime_error("cannot place memory on cuda:" + std::to_string(device) + ": " + kReason);
}
void deallocate(void*, std::size_t, int) { unavailable(); }
void copy(void*, const void*, std::size_t, int) { unavailable(); }
void synchronize(int) { unavailable(); }
MemoryStats memory_stats(int) { return {}; }

}  // namespace ringgrad::cuda
