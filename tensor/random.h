// Seeded random numbers whose values depend only on (seed, position in the stream), never on
// thread count or platform: every rank that seeds alike builds the same initial model.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad {

/// A counter-based generator: the i-th draw is a hash (SplitMix64, Steele et al. 2014) of
/// seed and i. Copyable; draws advance the counter.
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}
  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_; }
  void set_offset(std::uint64_t offset) { offset_ = offset; }

  /// 64 random bits.
  std::uint64_t next_u64();
  /// Uniform in [0, 1), 53 bits of precision.
  double next_double();
  /// Standard normal (Box-Muller from two uniforms).
  double next_normal();
  /// Uniform integer in [0, n).
  std::uint64_t next_below(std::uint64_t n);

 private:
  std::uint64_t seed_;
  std::uint64_t offset_ = 0;
};

/// The process-wide generator modules draw their initial weights from (torch.manual_seed).
Generator& default_generator();
/// Resets the default generator to `seed`.
void manual_seed(std::uint64_t seed);

namespace kernels {
/// Fills t (float32/float64, any device) in place with U[low, high); a GPU tensor gets the
/// values a CPU tensor would.
void uniform_(const Tensor& t, double low, double high, Generator& gen = default_generator());
/// Fills t (float32/float64, any device) in place with N(mean, std^2).
void normal_(const Tensor& t, double mean, double std, Generator& gen = default_generator());
}  // namespace kernels

/// A random permutation of 0..n-1 (Fisher-Yates).
std::vector<std::int64_t> randperm(std::int64_t n, Generator& gen);

}  // namespace ringgrad
