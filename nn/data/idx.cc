// Reading IDX files through zlib (gzread reads plain and .gz files alike): the magic number, the
// big-endian sizes, then the bytes, with a DataError naming the file for anything short or odd.
#include "nn/data/idx.h"

#include <fmt/format.h>
#include <zlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

namespace ringgrad::nn::data {
namespace {

struct GzClose {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzClose>;

// Reads exactly `n` bytes or reports how many were there.
std::size_t read_some(gzFile f, void* out, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
    const int got = gzread(f, static_cast<char*>(out) + done, chunk);
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

std::uint32_t big_endian(const std::uint8_t* b) {
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
}

}  // namespace

void require_file(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw DataError(path + ": is a directory, not a file");
  if (!std::filesystem::exists(path)) throw DataError(path + ": no such file");
  if (!std::filesystem::is_regular_file(path)) throw DataError(path + ": not a regular file (a device, pipe or socket)");
  if (::access(path.c_str(), R_OK) != 0) throw DataError(path + ": the file is not readable");
}

IdxArray read_idx(const std::string& path) {
  require_file(path);
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) throw DataError(path + ": cannot open");

  std::uint8_t magic[4];
  if (read_some(file.get(), magic, 4) != 4) throw DataError(path + ": truncated before the IDX magic number");
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0 || magic[3] > 4) {
    throw DataError(fmt::format("{}: bad IDX magic number 0x{:02x}{:02x}{:02x}{:02x}; expected 0x000008NN "
                                "(unsigned bytes, NN = 1..4 dimensions)",
                                path, magic[0], magic[1], magic[2], magic[3]));
  }
  IdxArray array;
  std::uint64_t count = 1;
  for (int d = 0; d < magic[3]; ++d) {
    std::uint8_t size[4];
    if (read_some(file.get(), size, 4) != 4) throw DataError(path + ": truncated inside the IDX dimensions");
    array.shape.push_back(big_endian(size));
    count *= big_endian(size);
  }
  // 2^32 bytes is far beyond any IDX data set; refuse before allocating for a corrupt size.
  if (count > (std::uint64_t{1} << 32)) throw DataError(fmt::format("{}: implausible size {} bytes", path, count));
  array.data.resize(count);
  const std::size_t got = read_some(file.get(), array.data.data(), count);
  if (got != count) {
    throw DataError(fmt::format("{}: truncated: expected {} bytes of data, found {}", path, count, got));
  }
  return array;
}

}  // namespace ringgrad::nn::data
