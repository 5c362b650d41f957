// Small-receive polling: non-blocking steps in a loop until the poll's end.

#include "transport/small_receive_poll.h"

#include <cstdint>

#include "transport/config.h"
#include "transport/net.h"

namespace ringgrad::transport::detail {

Step poll_small_receive(FramedSocket& socket, Op*& op, std::chrono::microseconds poll, std::string& cause) {
  if (socket.direction() != Direction::recv || op->size > kPolledReceiveBytes || poll.count() == 0) {
    return Step::would_block;
  }
  const auto until = net::Clock::now() + poll;
  Step result = Step::would_block;
  do {
    result = socket.step(op, /*blocking=*/false, UINT64_MAX, cause);
  } while (result == Step::would_block && net::Clock::now() < until);
  return result;
}

}  // namespace ringgrad::transport::detail
