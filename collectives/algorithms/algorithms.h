// The collective algorithms behind Communicator, one file each; costs in the alpha-beta-gamma
// model (alpha: seconds per message, beta: seconds per byte sent, gamma: seconds per byte
// reduced) for n bytes on p ranks are in each file's header comment and in cost_model.cc.
#pragma once

#include <cstddef>
#include <span>

#include "collectives/algo.h"
#include "collectives/dtype.h"
#include "collectives/host_layout.h"
#include "collectives/links/link.h"
#include "collectives/p2p_op.h"

namespace ringgrad::collectives {

/// Arguments of one collective, already checked. `count` is, as in NCCL: the buffer length
/// for all_reduce/broadcast/reduce, the per-rank send count for all_gather and gather (recv
/// holds count * p), the per-rank recv count for reduce_scatter and scatter (send holds
/// count * p), the elements per peer for all_to_all (both hold count * p). send == recv (or
/// NCCL's offset for all_gather/reduce_scatter, MPI's for gather/scatter) means in place.
struct CollArgs {
  const std::byte* send;
  std::byte* recv;
  std::size_t count;
  DType dtype;
  ReduceOp op;
  int root;
};

/// Block b of `total` elements cut into p nearly equal blocks: [total*b/p, total*(b+1)/p).
struct Blocks {
  std::size_t total;
  int p;
  std::size_t begin(int b) const { return total * static_cast<std::size_t>(b) / static_cast<std::size_t>(p); }
  std::size_t size(int b) const { return begin(b + 1) - begin(b); }
};

// ring_all_reduce.cc (Patarasuk & Yuan 2009)
void ring_all_reduce(Link& link, const CollArgs& args);
/// The ring's two halves on the whole buffer (args.count elements in p Blocks): afterwards
/// rank r holds block r of op over ranks in args.recv (not divided for AVG; partial sums
/// elsewhere); then every block of `buffer` from its owner.
void ring_reduce_scatter_blocks(Link& link, const CollArgs& args);
void ring_all_gather_blocks(Link& link, std::byte* buffer, std::size_t count, DType dtype);
void ring_reduce_scatter(Link& link, const CollArgs& args);
void ring_all_gather(Link& link, const CollArgs& args);
// chain.cc: pipelined chain from/to root
void chain_broadcast(Link& link, const CollArgs& args);
void chain_reduce(Link& link, const CollArgs& args);
// tree.cc: binomial trees
void tree_broadcast(Link& link, const CollArgs& args);
void tree_reduce(Link& link, const CollArgs& args);
void tree_all_reduce(Link& link, const CollArgs& args);
// hierarchical_all_reduce.cc: inside hosts, across hosts, inside hosts (a flat ring when the
// ranks are on one host or the hosts hold different numbers of ranks)
void hierarchical_all_reduce(Link& link, const CollArgs& args, const HostLayout& hosts);
// halving_doubling.cc (Thakur, Rabenseifner & Gropp 2005)
void halving_doubling_all_reduce(Link& link, const CollArgs& args);
// one_shot_all_reduce.cc: every vector to every rank (p-1 pairwise exchanges), reduced locally
void one_shot_all_reduce(Link& link, const CollArgs& args);
/// recv = inputs[0] op inputs[1] op ... left to right, then divided for AVG: the same bits on
/// every rank that reduces the same inputs. An input may be recv itself; `scratch` (count
/// elements, unused for 1 or 2 inputs; neither recv nor an input) holds the running result.
/// In the link's memory.
void reduce_in_rank_order(Link& link, std::span<const std::byte* const> inputs, std::byte* recv, std::size_t count,
                          DType dtype, ReduceOp op, std::byte* scratch);
// gather_scatter.cc: the root exchanges with every rank directly
void linear_gather(Link& link, const CollArgs& args);
void linear_scatter(Link& link, const CollArgs& args);
// all_to_all.cc: pairwise exchange, and Bruck et al. 1997 for small blocks
void pairwise_all_to_all(Link& link, const CollArgs& args);
void bruck_all_to_all(Link& link, const CollArgs& args);
/// Block q of args.send (send_counts[q] elements, blocks back to back) to rank q; block q of
/// args.recv (recv_counts[q]) from rank q: p-1 steps as pairwise_all_to_all.
void pairwise_all_to_all_v(Link& link, const CollArgs& args, std::span<const std::size_t> send_counts,
                           std::span<const std::size_t> recv_counts);
// batch_send_recv.cc: every receive posted, then every send, then all waited for
void irecv_isend_waitall(Link& link, std::span<const P2POp> ops);
// barrier.cc (Hensgen, Finkel & Manber 1988)
void dissemination_barrier(Link& link);

/// dispatch.cc: runs `kind` with `algo` (already resolved) over `link`, host or device alike;
/// send and recv go to or come from `peer`; `hosts` says which ranks share a host.
/// Throws what the algorithm throws.
void run_collective(Link& link, CollKind kind, Algo algo, const CollArgs& args, int peer, const HostLayout& hosts);

}  // namespace ringgrad::collectives
