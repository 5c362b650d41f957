// Views share storage: shapes and strides change, elements do not move, writes show through.
#include <catch2/catch.hpp>

#include "tensor/elementwise.h"
#include "tensor/view.h"

using namespace ringgrad;
namespace k = ringgrad::kernels;

static Tensor iota(const Shape& shape) {
  return k::to_dtype(k::view(Tensor::arange(numel(shape)), shape), DType::Float32);
}

TEST_CASE("transpose and permute move strides, not data") {
  Tensor a = iota({2, 3, 4});
  Tensor t = k::transpose(a, 0, 2);
  REQUIRE(t.shape() == Shape{4, 3, 2});
  REQUIRE(t.strides() == Strides{1, 4, 12});
  REQUIRE(t.storage() == a.storage());
  REQUIRE_FALSE(t.is_contiguous());
  // Element (i, j, l) of the transpose is element (l, j, i) of a = 12 l + 4 j + i.
  std::vector<float> v = t.to_vector<float>();
  REQUIRE(v[0 * 6 + 1 * 2 + 1] == 12 * 1 + 4 * 1 + 0);
  Tensor p = k::permute(a, {1, 2, 0});
  REQUIRE(p.shape() == Shape{3, 4, 2});
  REQUIRE(k::contiguous(p).to_vector<float>()[1] == 12.0f);  // (0, 0, 1) -> a(1, 0, 0)
}

TEST_CASE("writes through a view are seen by its base") {
  Tensor a = iota({3, 4});
  Tensor column = k::narrow(a, 1, 2, 1);  // column 2, shape [3, 1]
  k::fill_(column, -1.0);
  REQUIRE(a.to_vector<float>() == std::vector<float>{0, 1, -1, 3, 4, 5, -1, 7, 8, 9, -1, 11});
  Tensor row = k::view(a, {12});
  k::fill_(k::narrow(row, 0, 0, 2), 7.0);
  REQUIRE(a.to_vector<float>()[0] == 7.0f);
  REQUIRE(a.to_vector<float>()[1] == 7.0f);
}

TEST_CASE("expand broadcasts with stride 0 and contiguous copies") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, {3});
  Tensor e = k::expand(a, {2, 3});
  REQUIRE(e.strides() == Strides{0, 1});
  REQUIRE(e.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  Tensor c = k::contiguous(e);
  REQUIRE(c.is_contiguous());
  REQUIRE(c.storage() != a.storage());
  REQUIRE_THROWS_WITH(k::expand(a, {2, 4}), Catch::Contains("expand") && Catch::Contains("[3]"));
}

TEST_CASE("view needs contiguous data, reshape copies when it must") {
  Tensor a = iota({2, 3});
  REQUIRE(k::view(a, {3, -1}).shape() == Shape{3, 2});
  Tensor t = k::transpose(a, 0, 1);
  REQUIRE_THROWS_WITH(k::view(t, {6}), Catch::Contains("not contiguous"));
  REQUIRE(k::reshape(t, {6}).to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  REQUIRE_THROWS_WITH(k::view(a, {4, 2}), Catch::Contains("[4, 2]"));
}

TEST_CASE("squeeze and unsqueeze") {
  Tensor a = iota({2, 3});
  REQUIRE(k::unsqueeze(a, 1).shape() == Shape{2, 1, 3});
  REQUIRE(k::unsqueeze(a, -1).shape() == Shape{2, 3, 1});
  REQUIRE(k::squeeze(k::unsqueeze(a, 0), 0).shape() == Shape{2, 3});
  REQUIRE_THROWS(k::squeeze(a, 0));
}

TEST_CASE("a negative size is a named error before any memory is asked for") {
  // -1 rows once became a 2^64-byte request whose clearing crashed (train_gpt --block_size -1).
  for (const Shape& shape : {Shape{-1}, Shape{4, -8}, Shape{65, -8}}) {
    CHECK_THROWS_WITH(Tensor::zeros(shape), Catch::Contains("negative size"));
    CHECK_THROWS_WITH(Tensor::empty(shape), Catch::Contains("negative size"));
  }
  CHECK(Tensor::zeros({0, 3}).numel() == 0);  // an empty tensor is fine
}
