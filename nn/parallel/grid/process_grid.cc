// ProcessGrid: row-major coordinates over the named dimensions, and the groups along each.
#include "nn/parallel/grid/process_grid.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ringgrad::nn::parallel {

ProcessGrid::ProcessGrid(std::vector<std::pair<std::string, int>> dims, int world_size)
    : dims_(std::move(dims)), strides_(dims_.size(), 1), world_size_(world_size) {
  std::set<std::string> names;
  long long product = 1;
  for (const auto& [name, size] : dims_) {
    if (name.empty() || !names.insert(name).second)
      throw std::invalid_argument(fmt::format("process grid: dimension name '{}' is empty or given twice", name));
    if (size < 1) throw std::invalid_argument(fmt::format("process grid: {} has size {}: sizes start at 1", name, size));
    product *= size;
  }
  if (product != world_size) {
    std::vector<std::string> parts;
    for (const auto& [name, size] : dims_) parts.push_back(fmt::format("{} {}", name, size));
    throw std::invalid_argument(fmt::format("process grid {} holds {} ranks, but the world has {}",
                                            fmt::join(parts, " x "), product, world_size));
  }
  for (std::size_t i = dims_.size(); i-- > 1;) strides_[i - 1] = strides_[i] * dims_[i].second;
}

std::size_t ProcessGrid::index_of(std::string_view dim) const {
  for (std::size_t i = 0; i < dims_.size(); ++i)
    if (dims_[i].first == dim) return i;
  std::vector<std::string> names;
  for (const auto& d : dims_) names.push_back(d.first);
  throw std::invalid_argument(fmt::format("process grid: no dimension '{}' (it has {})", dim, fmt::join(names, ", ")));
}

void ProcessGrid::check_rank(int rank) const {
  if (rank < 0 || rank >= world_size_)
    throw std::invalid_argument(fmt::format("process grid: rank {} is not in [0, {})", rank, world_size_));
}

int ProcessGrid::size(std::string_view dim) const { return dims_[index_of(dim)].second; }

int ProcessGrid::coordinate(int rank, std::string_view dim) const {
  check_rank(rank);
  const std::size_t i = index_of(dim);
  return rank / strides_[i] % dims_[i].second;
}

std::vector<int> ProcessGrid::group(int rank, std::string_view dim) const {
  const std::size_t i = index_of(dim);
  const int first = rank - coordinate(rank, dim) * strides_[i];  // the member at coordinate 0
  std::vector<int> out;
  for (int c = 0; c < dims_[i].second; ++c) out.push_back(first + c * strides_[i]);
  return out;
}

int ProcessGrid::group_index(int rank, std::string_view dim) const {
  // The group's lowest rank is high * (stride * size) + low with low < stride: drop the
  // dimension from the mixed radix, and (high, low) numbers the groups in that order.
  const std::size_t i = index_of(dim);
  const int lowest = group(rank, dim).front(), stride = strides_[i];
  return lowest / (stride * dims_[i].second) * stride + lowest % stride;
}

int ProcessGrid::rank_at(const std::vector<int>& coordinates) const {
  if (coordinates.size() != dims_.size())
    throw std::invalid_argument(fmt::format("process grid: {} coordinates for {} dimensions", coordinates.size(), dims_.size()));
  int rank = 0;
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (coordinates[i] < 0 || coordinates[i] >= dims_[i].second)
      throw std::invalid_argument(fmt::format("process grid: {} coordinate {} is not in [0, {})", dims_[i].first,
                                              coordinates[i], dims_[i].second));
    rank += coordinates[i] * strides_[i];
  }
  return rank;
}

std::string ProcessGrid::describe() const {
  std::vector<std::string> parts;
  for (const auto& [name, size] : dims_) parts.push_back(fmt::format("{} {}", name, size));
  std::string out = fmt::format("{}\n", fmt::join(parts, " x "));
  for (int r = 0; r < world_size_; ++r) {
    std::vector<std::string> coords;
    for (const auto& d : dims_) coords.push_back(fmt::format("{} {}", d.first, coordinate(r, d.first)));
    out += fmt::format("rank {}: {}\n", r, fmt::join(coords, ", "));
  }
  return out;
}

}  // namespace ringgrad::nn::parallel
