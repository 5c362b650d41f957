// Local validation: whether this rank's own arguments of a call are usable (buffers, counts,
// root, overlap), before any byte moves. It needs no other rank; the argument check
// (check.h) then compares what every rank asked for.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/algo.h"
#include "collectives/buffer.h"

namespace ringgrad::collectives {

/// Empty when the call is usable on this rank, else why not ("recv holds 10 elements, ...").
/// Host and device buffers are not mixed in one call; device buffers must be device memory.
/// `elem_bytes`: the size of one element of the call's dtype.
std::string validate(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank, int world_size,
                     std::size_t elem_bytes);

}  // namespace ringgrad::collectives
