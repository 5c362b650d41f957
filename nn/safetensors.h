// Checkpoints in the safetensors format (Hugging Face): an 8-byte little-endian header
// length, a JSON header {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
// "__metadata__": {...}}, then the raw little-endian tensor bytes. PyTorch and Hugging Face
// load these files directly (safetensors.torch.load_file).
#pragma once

#include <map>
#include <string>

#include "nn/module.h"

namespace ringgrad::nn {

/// Writes `tensors` (any layout, any device: GPU tensors are copied to the CPU; saved
/// contiguous) and string `metadata` to `path`, atomically: into a temporary file beside it,
/// flushed to disk (fsync), then renamed over `path`, so a crash mid-write leaves the previous
/// file whole. Throws std::runtime_error naming the path when the file cannot be written (the
/// temporary is removed).
void save_safetensors(const std::string& path, const StateDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  StateDict tensors;
  std::map<std::string, std::string> metadata;
};

/// Reads a safetensors file (dtypes F32, F64, I64) into CPU tensors. Throws std::runtime_error naming the
/// path and the problem for a missing file, a truncated file, a header that is not JSON or
/// is larger than the file, or offsets that do not match the shape.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace ringgrad::nn
