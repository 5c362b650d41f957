// The IDX file format of MNIST and Fashion-MNIST (LeCun et al.), plain or gzip-compressed:
// a 4-byte magic number 0x0000TTNN (TT = element type, 0x08 for unsigned bytes; NN = number
// of dimensions), NN big-endian 32-bit sizes, then the elements row-major.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringgrad::nn::data {

/// A data file that cannot be used: missing, truncated, or not in the expected format.
/// Programs report its message and exit with status 2.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws DataError unless `path` is a regular file this process may read: "PATH: no such
/// file", "PATH: is a directory, not a file", "PATH: not a regular file" (a device, pipe or
/// socket), or "PATH: the file is not readable".
void require_file(const std::string& path);

/// An unsigned-byte IDX array.
struct IdxArray {
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data;  // row-major, product(shape) bytes
};

/// Reads an IDX file of unsigned bytes (.gz or not; zlib detects which). Throws DataError
/// naming the path for a missing file, a bad magic number, or a truncated file.
IdxArray read_idx(const std::string& path);

}  // namespace ringgrad::nn::data
