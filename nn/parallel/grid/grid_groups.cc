// split_along: a ProcessGrid's dimension as the color and key of a split.
#include "nn/parallel/grid/grid_groups.h"

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace ringgrad::nn::parallel {

std::unique_ptr<collectives::Communicator> split_along(collectives::Communicator& world, const ProcessGrid& grid,
                                                     std::string_view dim) {
  if (grid.world_size() != world.world_size()) {
    const std::string shape = grid.describe().substr(0, grid.describe().find('\n'));
    throw std::invalid_argument(fmt::format("split_along({}) on rank {}: the grid {} has {} ranks, the communicator {}",
                                            dim, world.rank(), shape, grid.world_size(), world.world_size()));
  }
  const int rank = world.rank();
  return world.split(grid.group_index(rank, dim), grid.coordinate(rank, dim), std::string(dim));
}

}  // namespace ringgrad::nn::parallel
