// Local validation: whether this rank's own arguments of a call are usable (buffers, counts,
// root, overlap), before any byte moves. It needs no other rank; the argument check
// (check.h) then compares what every rank asked for.
#pragma once

#include <string>

#include "collectives/algo.h"
#include "collectives/buffer.h"

namespace ringgrad::collectives {

/// Empty when the call is usable on this rank, else why not ("recv holds 10 elements, ...").
/// Host and device buffers are not mixed in one call; device buffers must be device memory.
std::string validate(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank, int world_size);

/// Which buffers rank `rank` uses: the root alone sends in broadcast and scatter, and alone
/// receives in reduce and gather.
bool uses_send(CollKind kind, int rank, int root);
bool uses_recv(CollKind kind, int rank, int root);

/// The buffers of a call that this rank uses live on `device` (kHost: host memory).
int call_device(CollKind kind, const ConstBuffer& send, const Buffer& recv, int root, int rank);

}  // namespace ringgrad::collectives
