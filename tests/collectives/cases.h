// The collective cases shared by the sweeps: every collective x algorithm x dtype x op x count
// {0, 1, 7, 1000003} x in/out of place, each checked against the serial reference
// (collectives/reference.h) on every rank. Run inside each rank of a multi-process test.
#pragma once

#include <span>

#include "collectives/communicator.h"

namespace ringgrad::test {

/// Every case of `kind` on `comm`, for each algorithm of `algos` that `kind` has (Algo::kAuto:
/// whatever the communicator picks); float16/bfloat16 reductions only when
/// `half_precision_reductions`. Throws (check()) naming the rank and the case that differs.
void run_cases(collectives::Communicator& comm, collectives::CollKind kind, std::span<const collectives::Algo> algos,
               bool half_precision_reductions = true);

/// One all_to_all_v of `dtype` whose count from rank f to rank t is ((7f + 3t) mod 4) x scale
/// elements, checked against the reference on every rank.
void run_all_to_all_v(collectives::Communicator& comm, collectives::DType dtype, std::size_t scale);

}  // namespace ringgrad::test
