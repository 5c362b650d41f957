// The training state of a data-parallel run as a whole: checkpoints gathered from replicas or
// shards onto rank 0 and loaded back on any world size, and the bytes each rank keeps for it.
// Each strategy says how its tensors become full ones (DataParallel::full_parameter and
// friends); the walks over parameters, optimizer state and buffers are written once, here.
#pragma once

#include "nn/module.h"
#include "nn/parallel/data_parallel/data_parallel.h"

namespace ringgrad::nn::parallel {

/// Collective: the whole training state of `dp` (parameters by name, optimizer state as
/// "optimizer.<state>.<parameter>", "optimizer.steps", buffers) complete on rank 0; other ranks
/// get an empty dict. Sharded strategies all-gather each tensor; expert parallelism gathers
/// the experts other ranks hold.
StateDict full_state_dict(DataParallel& dp);
/// Loads a full state (any world size saved it): every rank passes the same dict and keeps
/// its part. Throws std::invalid_argument naming a missing or mis-shaped entry.
void load_full_state_dict(DataParallel& dp, const StateDict& state);

/// Bytes this rank keeps for parameters, gradients and optimizer state (ZeRO's measure).
struct MemoryUse {
  double params = 0, grads = 0, optimizer = 0;
};
/// What `dp` holds on this rank now: distinct storages, so views into one buffer (DDP's
/// buckets, ZeRO's shards) count once.
MemoryUse memory_use(const DataParallel& dp);

}  // namespace ringgrad::nn::parallel
