// The counter-based draw that Generator, dropout's CPU loop and its CUDA kernel share
// (tensor/counter_rng.h) gives exactly the values the generator gave before it was shared:
// SplitMix64's published outputs, and values pinned from the original implementation.
#include <catch2/catch.hpp>

#include "tensor/counter_rng.h"
#include "tensor/dropout.h"
#include "tensor/random.h"

using namespace ringgrad;

TEST_CASE("splitmix64 of (seed 0, counter 1, 2, 3) is SplitMix64's published stream from state 0") {
  CHECK(splitmix64(0, 1) == 0xe220a8397b1dcdafULL);
  CHECK(splitmix64(0, 2) == 0x6e789e6aa1b965f4ULL);
  CHECK(splitmix64(0, 3) == 0x06c45d188009454fULL);
}

TEST_CASE("Generator draws are the shared helper's, and the values are the same as before") {
  Generator gen(1234);
  CHECK(gen.next_u64() == 0xbb0cf61b2f181cdbULL);  // pinned from the original Generator
  CHECK(gen.next_u64() == 0x97c7a1364df06524ULL);
  CHECK(gen.next_u64() == 0x33befae49bc025daULL);
  CHECK(gen.next_double() == 0.30618679205037092);
  CHECK(gen.offset() == 4);
  Generator again(1234);
  for (std::uint64_t counter = 1; counter <= 100; ++counter) {
    if (counter % 2 == 0) {
      REQUIRE(again.next_double() == uniform_double(1234, counter));
    } else {
      REQUIRE(again.next_u64() == splitmix64(1234, counter));
    }
  }
}

TEST_CASE("dropout masks on the CPU are unchanged: element i uses draw offset + 1 + i") {
  Generator gen(7);
  const Tensor mask = kernels::dropout_mask({3, 4}, 0.5, DType::Float32, gen);
  // Pinned from the original implementation (one next_double() per element, in order).
  CHECK(mask.to_vector<float>() == std::vector<float>{0, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 2});
  CHECK(gen.offset() == 12);
  // The next mask continues the stream where this one stopped.
  Generator replay(7);
  replay.set_offset(12);
  const Tensor next = kernels::dropout_mask({50}, 0.25, DType::Float64, gen);
  const std::vector<double> values = next.to_vector<double>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    REQUIRE(values[i] == (replay.next_double() < 0.25 ? 0.0 : 1 / 0.75));
  }
  CHECK(gen.offset() == replay.offset());
}
