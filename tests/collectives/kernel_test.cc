// float16/bfloat16 conversions against known bit patterns, and the reduction kernels of every
// dtype x op against scalar arithmetic written out here.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "collectives/reduce/dtype_dispatch.h"
#include "collectives/reduce/half.h"
#include "collectives/reduce/reduce_kernel.h"
#include "collectives/reference.h"

namespace ringgrad::test {

using collectives::BFloat16;
using collectives::DType;
using collectives::ReduceOp;
using collectives::Float16;
using namespace collectives::reference;  // inputs and serial results to compare with

TEST_CASE("float16 conversions match IEEE binary16 bit patterns", "[collectives]") {
  const std::pair<float, uint16_t> known[] = {
      {0.0f, 0x0000}, {-0.0f, 0x8000}, {1.0f, 0x3c00}, {-2.0f, 0xc000}, {0.5f, 0x3800},
      {65504.0f, 0x7bff}, {65520.0f, 0x7c00}, {std::numeric_limits<float>::infinity(), 0x7c00},
      {5.9604645e-8f, 0x0001}, {6.1035156e-5f, 0x0400}, {1.0009765625f, 0x3c01},
      {1.00048828125f, 0x3c00},  // halfway between 1 and 1+2^-10: rounds to even
      {1.00146484375f, 0x3c02},  // halfway between 1+2^-10 and 1+2^-9: rounds to even
  };
  for (auto [f, bits] : known) {
    INFO(f);
    CHECK(collectives::to_float16(f).bits == bits);
  }
  for (uint32_t b = 0; b < 0x7c00; ++b)  // every finite half survives a round trip
    REQUIRE(collectives::to_float16(collectives::to_float(Float16{static_cast<uint16_t>(b)})).bits == b);
  CHECK(std::isnan(collectives::to_float(Float16{0x7e00})));
}

TEST_CASE("bfloat16 conversions round to nearest even", "[collectives]") {
  CHECK(collectives::to_bfloat16(1.0f).bits == 0x3f80);
  CHECK(collectives::to_bfloat16(-3.0f).bits == 0xc040);
  CHECK(collectives::to_bfloat16(std::bit_cast<float>(0x3f808000u)).bits == 0x3f80);  // tie, even
  CHECK(collectives::to_bfloat16(std::bit_cast<float>(0x3f818000u)).bits == 0x3f82);  // tie, even
  CHECK(collectives::to_float(BFloat16{0x4049}) == 3.140625f);
  CHECK(std::isnan(collectives::to_float(collectives::to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("combine and finalize agree with a 2-rank serial reference for every dtype and op", "[collectives]") {
  for (DType dtype : collectives::kAllDTypes)
    for (ReduceOp op : collectives::kAllReduceOps) {
      INFO(collectives::dtype_name(dtype) << " " << collectives::reduce_op_name(op));
      const std::size_t n = 1001;
      auto a = make_input(0, n, op, dtype), b = make_input(1, n, op, dtype);
      std::vector<std::byte> out(a.size());
      collectives::combine(out.data(), a.data(), b.data(), n, dtype, op);
      collectives::divide_for_avg(out.data(), n, dtype, op, 2);
      CHECK(first_difference(out.data(), expected_reduction(2, 0, n, op, dtype).data(), n, dtype) == -1);
      collectives::combine(a.data(), a.data(), b.data(), n, dtype, op);  // in place
      collectives::divide_for_avg(a.data(), n, dtype, op, 2);
      CHECK(first_difference(a.data(), out.data(), n, dtype) == -1);
    }
}

TEST_CASE("integer SUM wraps instead of overflowing and float16 reduces in float32", "[collectives]") {
  int32_t a = std::numeric_limits<int32_t>::max(), b = 1, c = 0;
  collectives::combine(&c, &a, &b, 1, DType::kInt32, ReduceOp::SUM);
  CHECK(c == std::numeric_limits<int32_t>::min());
  uint8_t x = 200, y = 100, z = 0;
  collectives::combine(&z, &x, &y, 1, DType::kUInt8, ReduceOp::SUM);
  CHECK(z == 44);
  // 2048 + 1 is not a half (spacing 2 there); the float32 sum rounds to even once: 2048.
  Float16 h1 = collectives::to_float16(2048.0f), h2 = collectives::to_float16(1.0f), h3{};
  collectives::combine(&h3, &h1, &h2, 1, DType::kFloat16, ReduceOp::SUM);
  CHECK(collectives::to_float(h3) == 2048.0f);
}

}  // namespace ringgrad::test
