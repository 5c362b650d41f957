// ProcessGrid: the ranks of a job laid out on named dimensions, dp x pp x cp x tp or any
// subset (PyTorch's DeviceMesh, Megatron's parallel state): rank = sum of coordinate x stride,
// the last dimension varying fastest, so with ("dp", 2), ("tp", 4) ranks 0-3 form one
// tensor-parallel group and ranks 0 and 4 one data-parallel group. It says which group each
// rank is in along each dimension (the color and key a split needs); it moves no data.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringgrad::nn::parallel {

class ProcessGrid {
 public:
  /// `dims`: (name, size) outermost first. Throws std::invalid_argument when a size is below
  /// 1, a name is empty or repeated, or the sizes' product is not `world_size`.
  ProcessGrid(std::vector<std::pair<std::string, int>> dims, int world_size);

  int world_size() const { return world_size_; }
  /// The size of dimension `dim`; throws std::invalid_argument naming the dimensions for an
  /// unknown one (as do the calls below).
  int size(std::string_view dim) const;
  /// `rank`'s coordinate along `dim`, in [0, size(dim)).
  int coordinate(int rank, std::string_view dim) const;
  /// The ranks that differ from `rank` only along `dim`, by coordinate: `rank`'s group there.
  std::vector<int> group(int rank, std::string_view dim) const;
  /// Which of the world_size / size(dim) groups along `dim` holds `rank`, numbered by their
  /// lowest rank: a split's color (its key: coordinate(rank, dim)).
  int group_index(int rank, std::string_view dim) const;
  /// The rank at `coordinates` (one per dimension, outermost first).
  int rank_at(const std::vector<int>& coordinates) const;
  /// "dp 2 x tp 4", and one line per rank with its coordinates.
  std::string describe() const;

 private:
  std::size_t index_of(std::string_view dim) const;
  void check_rank(int rank) const;

  std::vector<std::pair<std::string, int>> dims_;
  std::vector<int> strides_;  // strides_[i]: product of the sizes after dimension i
  int world_size_;
};

}  // namespace ringgrad::nn::parallel
