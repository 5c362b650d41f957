// Batched point-to-point: every receive of the batch is posted, then every send, then all are
// waited for (MPI_Irecv, MPI_Isend, MPI_Waitall). Over TCP both progress on the transport's
// thread, so no order of the ranks' batches can deadlock: a ring exchange in both directions,
// or a pipeline stage sending activations forward while receiving gradients back, is one batch.
// T = the slowest peer's alpha + bytes beta; sends to different peers overlap.
#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {

void irecv_isend_waitall(Link& link, std::span<const P2POp> ops) {
  std::vector<Pending> recvs, sends;
  for (const P2POp& op : ops)
    if (!op.is_send) link.irecv(op.peer, op.buffer.data, op.buffer.count * dtype_size(op.buffer.dtype), recvs);
  for (const P2POp& op : ops)
    if (op.is_send) link.isend(op.peer, op.buffer.data, op.buffer.count * dtype_size(op.buffer.dtype), sends);
  wait_all(recvs);
  wait_all(sends);
}

}  // namespace ringgrad::collectives
