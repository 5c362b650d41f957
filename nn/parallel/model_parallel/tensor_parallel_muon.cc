// split_over: which parameters are slices (found by their data's address, as the optimizer
// holds the same tensors), gathered whole with gather_shards and cut back with shard_of.
#include "nn/parallel/model_parallel/tensor_parallel_muon.h"

#include <map>
#include <memory>

#include "nn/parallel/model_parallel/tensor_parallel_gpt.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {

MuonOptions split_over(MuonOptions options, const Module& model, collectives::Communicator& tp) {
  if (tp.world_size() == 1) return options;
  auto specs = std::make_shared<std::map<const void*, ShardSpec>>();
  for (const auto& [name, p] : model.named_parameters())
    if (const ShardSpec spec = shard_spec(name); spec.dim >= 0 && p.dim() == 2) specs->emplace(p.raw_data(), spec);
  auto spec_of = [specs](const Tensor& p) {
    const auto it = specs->find(p.raw_data());
    return it == specs->end() ? ShardSpec{} : it->second;
  };
  options.whole = [spec_of, &tp](const Tensor& p, const Tensor& update) { return gather_shards(update, spec_of(p), tp); };
  options.slice = [spec_of, &tp](const Tensor& p, const Tensor& orthogonal) {
    return shard_of(orthogonal, spec_of(p), tp.rank(), tp.world_size());
  };
  return options;
}

}  // namespace ringgrad::nn::parallel
