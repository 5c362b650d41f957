// P2POp: one send or receive of a batch that is posted as one operation
// (torch.distributed.P2POp with batch_isend_irecv; MPI_Isend/MPI_Irecv then MPI_Waitall;
// ncclSend/ncclRecv between ncclGroupStart and ncclGroupEnd).
#pragma once

#include "collectives/buffer.h"

namespace ringgrad::collectives {

struct P2POp {
  bool is_send = false;
  Buffer buffer;  // a send only reads it
  int peer = -1;

  /// Sends `data` to `peer`; matched with the peer's receive from this rank, in order.
  static P2POp send(ConstBuffer data, int peer) {
    return {true, Buffer{const_cast<void*>(data.data), data.count, data.dtype, data.stride, data.device}, peer};
  }
  /// Receives from `peer` into `data`, whose count must be the size of the matching send.
  static P2POp recv(Buffer data, int peer) { return {false, data, peer}; }
};

}  // namespace ringgrad::collectives
