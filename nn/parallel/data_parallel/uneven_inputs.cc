// UnevenInputs: one small all-reduce per step (how many ranks have a batch), and when counts
// differ, either a zeroed loss and a rescaled mean, or an all-gather of the batch counts for
// the error.
#include "nn/parallel/data_parallel/uneven_inputs.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "autograd/ops.h"

namespace ringgrad::nn::parallel {

bool UnevenInputs::begin_step(bool have_batch) {
  collectives::Communicator& comm = dp_.comm();
  std::int64_t having = have_batch ? 1 : 0;
  comm.all_reduce(collectives::ConstBuffer(&having, 1, collectives::DType::kInt64),
                  collectives::Buffer(&having, 1, collectives::DType::kInt64), collectives::ReduceOp::SUM);
  have_ = have_batch;
  active_ = static_cast<int>(having);
  if (active_ == 0) return false;
  if (mode_ == Mode::kThrow && active_ < comm.world_size()) {
    const std::int64_t mine[2] = {seen_, have_batch ? 1 : 0};
    std::vector<std::int64_t> all(2 * static_cast<std::size_t>(comm.world_size()));
    comm.all_gather(collectives::ConstBuffer(mine, 2, collectives::DType::kInt64),
                    collectives::Buffer(all.data(), all.size(), collectives::DType::kInt64));
    std::vector<int> with, without;
    std::vector<std::int64_t> seen;
    for (int r = 0; r < comm.world_size(); ++r) {
      (all[2 * static_cast<std::size_t>(r) + 1] != 0 ? with : without).push_back(r);
      seen.push_back(all[2 * static_cast<std::size_t>(r)]);
    }
    throw std::runtime_error(fmt::format("uneven inputs (seen on rank {}): rank{} {} {} a batch for step {}, rank{} {} "
                                         "ran out (batches trained so far by rank: {})", comm.rank(),
                                         with.size() == 1 ? "" : "s", fmt::join(with, ", "), with.size() == 1 ? "has" : "have",
                                         *std::max_element(seen.begin(), seen.end()), without.size() == 1 ? "" : "s",
                                         fmt::join(without, ", "), fmt::join(seen, ", ")));
  }
  dp_.set_gradient_scale(static_cast<double>(comm.world_size()) / active_);
  return true;
}

void UnevenInputs::backward(const Tensor& loss) {
  if (have_) {
    dp_.backward(loss);
    ++seen_;
  } else {
    dp_.backward(loss * 0.0);  // this rank's share of the collectives, a gradient of zeros
  }
}

double UnevenInputs::step(double max_grad_norm) {
  const double norm = dp_.step(max_grad_norm);
  dp_.set_gradient_scale(1);
  return norm;
}

}  // namespace ringgrad::nn::parallel
