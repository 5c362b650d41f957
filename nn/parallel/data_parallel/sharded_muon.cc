// shard_over: the owner rule and the broadcast that shares each matrix.
#include "nn/parallel/data_parallel/sharded_muon.h"

#include "nn/parallel/tensor_buffer.h"

namespace ringgrad::nn::parallel {

MuonOptions shard_over(MuonOptions options, collectives::Communicator& comm) {
  if (comm.world_size() == 1) return options;
  options.shard_rank = comm.rank();
  options.shard_count = comm.world_size();
  options.share = [&comm](Tensor& p, int owner) { comm.broadcast(synced_buffer(p), synced_buffer(p), owner); };
  return options;
}

}  // namespace ringgrad::nn::parallel
