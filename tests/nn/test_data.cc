// The IDX reader on small files written here, plain and gzip-compressed, and its errors.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "nn/data/char_dataset.h"
#include "nn/data/fashion_mnist.h"
#include "nn/data/idx.h"
#include "nn/data/loader.h"

using namespace ringgrad;
using namespace ringgrad::nn::data;

namespace {

std::string temp_path(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

std::vector<std::uint8_t> idx_bytes(std::vector<std::uint32_t> shape, std::uint8_t first_value) {
  std::vector<std::uint8_t> bytes{0, 0, 0x08, static_cast<std::uint8_t>(shape.size())};
  std::size_t count = 1;
  for (std::uint32_t s : shape) {
    for (int shift : {24, 16, 8, 0}) bytes.push_back(static_cast<std::uint8_t>(s >> shift));
    count *= s;
  }
  for (std::size_t i = 0; i < count; ++i) bytes.push_back(static_cast<std::uint8_t>(first_value + i));
  return bytes;
}

void write_gz(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

void write_plain(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("IDX files, gzip-compressed or plain") {
  const std::string gz = temp_path("ringgrad_idx_test.gz"), plain = temp_path("ringgrad_idx_test");
  write_gz(gz, idx_bytes({2, 3, 2}, 10));
  write_plain(plain, idx_bytes({5}, 1));
  IdxArray a = read_idx(gz);
  REQUIRE(a.shape == std::vector<std::int64_t>{2, 3, 2});
  REQUIRE(a.data.size() == 12);
  REQUIRE(a.data[11] == 21);
  REQUIRE(read_idx(plain).data == std::vector<std::uint8_t>{1, 2, 3, 4, 5});
  std::filesystem::remove(gz);
  std::filesystem::remove(plain);
}

TEST_CASE("bad IDX files give errors naming the file and the problem") {
  const std::string path = temp_path("ringgrad_idx_bad.gz");
  auto bytes = idx_bytes({4, 2}, 0);
  bytes[2] = 0x0D;  // float elements: not what the reader supports
  write_gz(path, bytes);
  REQUIRE_THROWS_WITH(read_idx(path), Catch::Contains(path) && Catch::Contains("bad IDX magic number 0x00000d02"));
  bytes = idx_bytes({4, 2}, 0);
  bytes.resize(bytes.size() - 3);
  write_gz(path, bytes);
  REQUIRE_THROWS_WITH(read_idx(path), Catch::Contains("truncated: expected 8 bytes of data, found 5"));
  std::filesystem::remove(path);
  REQUIRE_THROWS_WITH(read_idx(path), Catch::Contains("no such file"));
  const std::string folder = std::filesystem::temp_directory_path().string();
  REQUIRE_THROWS_WITH(read_idx(folder), Catch::Contains(folder + ": is a directory, not a file"));
  REQUIRE_THROWS_WITH(CharDataset::from_file(folder), Catch::Contains(folder + ": is a directory, not a file"));
  REQUIRE_THROWS_WITH(CharDataset::from_file("/dev/null"), Catch::Contains("/dev/null: not a regular file"));
}

TEST_CASE("a Fashion-MNIST folder of generated files loads, normalised") {
  const auto dir = std::filesystem::temp_directory_path() / "ringgrad_fmnist_test";
  std::filesystem::create_directories(dir);
  write_gz((dir / "t10k-images-idx3-ubyte.gz").string(), idx_bytes({3, 2, 2}, 0));
  write_gz((dir / "t10k-labels-idx1-ubyte.gz").string(), idx_bytes({3}, 7));
  ImageDataset ds = load_fashion_mnist(dir.string(), false);
  REQUIRE(ds.images.shape() == Shape{3, 4});
  REQUIRE(ds.labels.to_vector<std::int64_t>() == std::vector<std::int64_t>{7, 8, 9});
  REQUIRE(ds.images.to_vector<float>()[5] == Approx((5 / 255.0 - kFashionMnistMean) / kFashionMnistStd));
  write_gz((dir / "t10k-labels-idx1-ubyte.gz").string(), idx_bytes({2}, 0));
  REQUIRE_THROWS_WITH(load_fashion_mnist(dir.string(), false), Catch::Contains("do not match"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("epoch order is a seeded permutation, new each epoch, and batches keep the remainder") {
  auto e0 = epoch_order(10, true, 5, 0), again = epoch_order(10, true, 5, 0), e1 = epoch_order(10, true, 5, 1);
  REQUIRE(e0 == again);
  REQUIRE(e0 != e1);
  auto batches = make_batches(epoch_order(10, false, 0, 0), 4);
  REQUIRE(batches.size() == 3);
  REQUIRE(batches[2] == std::vector<std::int64_t>{8, 9});
  REQUIRE(make_batches(epoch_order(10, false, 0, 0), 4, true).size() == 2);
}
