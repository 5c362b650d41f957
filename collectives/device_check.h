// Whether a buffer's memory is where its Buffer::device says: host memory, or memory of that
// CUDA device (asked of the CUDA runtime). A build without CUDA refuses device buffers.
#pragma once

#include <cstddef>
#include <string>

namespace ringgrad::collectives {

/// Empty when `count` elements at `data` can be used as memory of `device` (kHost: host memory,
/// not checked), else why not, naming `name` ("send", "recv") and the device. Cost: one
/// cudaPointerGetAttributes per device buffer (about a microsecond).
std::string check_memory(const char* name, const void* data, std::size_t count, int device);

/// "host memory" or "cuda:N".
std::string memory_name(int device);

/// Number of CUDA devices this process sees; 0 when there is none, no driver, or no CUDA build.
int cuda_device_count();

}  // namespace ringgrad::collectives
