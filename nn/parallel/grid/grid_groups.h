// The communicators of a ProcessGrid: one split of the world per dimension (PyTorch's
// DeviceMesh.get_group, Megatron's get_tensor_model_parallel_group), each named after its
// dimension so its errors say "group tp".
#pragma once

#include <memory>
#include <string_view>

#include "collectives/communicator.h"
#include "nn/parallel/grid/process_grid.h"

namespace ringgrad::nn::parallel {

/// This rank's group along `dim`: world.split(grid.group_index(rank, dim), coordinate along
/// dim, dim), so its group rank is its coordinate there. A collective over `world`: every rank
/// calls it, in the same order. Throws std::invalid_argument when grid.world_size() is not
/// world's size or dim is unknown (before any rank splits), and what split throws.
std::unique_ptr<collectives::Communicator> split_along(collectives::Communicator& world, const ProcessGrid& grid,
                                                     std::string_view dim);

}  // namespace ringgrad::nn::parallel
