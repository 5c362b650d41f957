// Muon under data parallelism with its work split over the ranks (the distributed Muon of the
// modded-nanogpt records): after DDP's all-reduce every rank holds the same averaged gradients,
// so orthogonalising every matrix on every rank is the same work done N times. Instead rank r
// runs Newton-Schulz on matrices r, r + N, r + 2N, ... and broadcasts each updated matrix from
// the rank that owns it. Each rank still updates every momentum buffer (element-wise, cheap), so
// parameters, states and checkpoints are exactly one process's.
#pragma once

#include "collectives/communicator.h"
#include "nn/muon.h"

namespace ringgrad::nn::parallel {

/// `options` with shard_rank, shard_count and share set for `comm` (broadcast from the owner).
/// For strategies that hold whole gradients on every rank (ddp, ddp-naive); with one rank
/// nothing changes.
MuonOptions shard_over(MuonOptions options, collectives::Communicator& comm);

}  // namespace ringgrad::nn::parallel
