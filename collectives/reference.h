// Serial reference collectives: what every rank should hold after each collective, computed in
// one process, in double, without the library's algorithms or reduction kernels. Tests and the
// *_perf tools (nccl-tests' #wrong column) compare against these. Rank r's input element i is a
// small integer, exact in every dtype, so any reduction order gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/algo.h"
#include "collectives/dtype.h"
#include "collectives/reduce/dtype_dispatch.h"

namespace ringgrad::collectives::reference {

/// Rank r's input element i for op: in [-4, 4] ([0, 8] for uint8), or {1, 2, -1} for PRODUCT.
inline double input_value(int rank, std::size_t i, ReduceOp op, DType dtype) {
  const std::size_t k = i * 7 + static_cast<std::size_t>(rank) * 5 + static_cast<std::size_t>(op);
  if (op == ReduceOp::PRODUCT) {
    static constexpr double kFactors[3] = {1, 2, -1};
    const double f = kFactors[k % 3];
    return dtype == DType::kUInt8 && f < 0 ? 1 : f;
  }
  const double v = static_cast<double>(k % 9);
  return dtype == DType::kUInt8 ? v : v - 4;
}

/// Stores x (exact) in the storage type of dtype.
template <typename T>
T store(double x) {
  if constexpr (std::is_same_v<T, Float16>) return to_float16(static_cast<float>(x));
  else if constexpr (std::is_same_v<T, BFloat16>) return to_bfloat16(static_cast<float>(x));
  else return static_cast<T>(x);
}

/// count elements of rank's input, as bytes.
inline std::vector<std::byte> make_input(int rank, std::size_t count, ReduceOp op, DType dtype, std::size_t first = 0) {
  std::vector<std::byte> out(count * dtype_size(dtype));
  visit_dtype(dtype, [&]<typename T>(std::type_identity<T>) {
    auto* p = reinterpret_cast<T*>(out.data());
    for (std::size_t i = 0; i < count; ++i) p[i] = store<T>(input_value(rank, first + i, op, dtype));
  });
  return out;
}

/// Elements [first, first+count) of op over ranks 0..p-1 of input_value, AVG as NCCL does
/// it: the sum divided by p in the compute type (float for 16-bit floats, integer division).
inline std::vector<std::byte> expected_reduction(int p, std::size_t first, std::size_t count, ReduceOp op, DType dtype) {
  std::vector<std::byte> out(count * dtype_size(dtype));
  visit_dtype(dtype, [&]<typename T>(std::type_identity<T>) {
    using V = typename Compute<T>::type;
    auto* o = reinterpret_cast<T*>(out.data());
    for (std::size_t i = 0; i < count; ++i) {
      double acc = input_value(0, first + i, op, dtype);
      for (int r = 1; r < p; ++r) {
        const double x = input_value(r, first + i, op, dtype);
        if (op == ReduceOp::SUM || op == ReduceOp::AVG) acc += x;
        else if (op == ReduceOp::PRODUCT) acc *= x;
        else if (op == ReduceOp::MIN) acc = x < acc ? x : acc;
        else acc = x > acc ? x : acc;
      }
      if (op == ReduceOp::AVG) o[i] = store<T>(static_cast<double>(static_cast<V>(static_cast<V>(acc) / static_cast<V>(p))));
      else o[i] = store<T>(acc);
    }
  });
  return out;
}

/// What rank r holds after `kind` (not barrier, send or recv; batch_send_recv: receiving from
/// rank r-1 while sending to r+1) on the inputs above, with
/// NCCL's `count`: elements per rank for all_gather and gather (the result holds count * p),
/// elements of the result for reduce_scatter and scatter, elements per peer for all_to_all
/// (p blocks), the buffer length otherwise. reduce's and gather's result is what the root
/// holds. Rank q's send buffer is make_input(q, ...) of the whole send length, except in
/// all_gather and gather, where it is the block [q*count, (q+1)*count) of the inputs.
inline std::vector<std::byte> expected_output(CollKind kind, int p, int r, std::size_t count, ReduceOp op, DType dtype,
                                              int root) {
  switch (kind) {
    case CollKind::kBroadcast: return make_input(root, count, op, dtype);
    case CollKind::kReduceScatter: return expected_reduction(p, static_cast<std::size_t>(r) * count, count, op, dtype);
    case CollKind::kScatter: return make_input(root, count, op, dtype, static_cast<std::size_t>(r) * count);
    case CollKind::kAllToAll: {
      std::vector<std::byte> all;
      for (int q = 0; q < p; ++q) {  // block q: what rank q sent to r, its block r
        const auto part = make_input(q, count, op, dtype, static_cast<std::size_t>(r) * count);
        all.insert(all.end(), part.begin(), part.end());
      }
      return all;
    }
    case CollKind::kBatchSendRecv:  // the ring exchange of sendrecv_perf: rank r-1's input
      return make_input((r + p - 1) % p, count, op, dtype);
    case CollKind::kGather:
    case CollKind::kAllGather: {
      std::vector<std::byte> all;
      for (int q = 0; q < p; ++q) {
        const auto part = make_input(q, count, op, dtype, static_cast<std::size_t>(q) * count);
        all.insert(all.end(), part.begin(), part.end());
      }
      return all;
    }
    default: return expected_reduction(p, 0, count, op, dtype);
  }
}

/// Index of the first element where a and b differ, or -1.
inline long first_difference(const std::byte* a, const std::byte* b, std::size_t count, DType dtype) {
  const std::size_t es = dtype_size(dtype);
  if (count == 0 || std::memcmp(a, b, count * es) == 0) return -1;
  for (std::size_t i = 0; i < count; ++i)
    if (std::memcmp(a + i * es, b + i * es, es) != 0) return static_cast<long>(i);
  return -1;
}

}  // namespace ringgrad::collectives::reference
