// A blocking receive on the caller's thread must not mistake a moment of non-blocking mode for
// its timeout. The progress thread's readiness watch (Connection::watch) sets and clears
// O_NONBLOCK on the file the socket shares with its duplicate; a recvmsg that starts inside that
// window gets EAGAIN at once, which once failed the connection with "no progress for 60 s".
#include <catch2/catch.hpp>

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>

#include "transport/channel.h"
#include "transport/connection.h"
#include "transport/error.h"
#include "tests/transport/channel_op.h"

namespace {

using namespace std::chrono_literals;
using ringgrad::transport::detail::Connection;
using ringgrad::transport::detail::Direction;
using ringgrad::transport::detail::Op;

void set_non_blocking(int fd, bool on) {
  int value = on ? 1 : 0;
  ::ioctl(fd, FIONBIO, &value);
}

}  // namespace

TEST_CASE("a blocking receive that starts while the socket is briefly non-blocking waits for its message",
          "[transport]") {
  asio::io_context io;
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
  auto sender = std::make_shared<Connection>(io, ringgrad::transport::net::Fd(sv[0]), 0, 1, 2000ms, 0us);
  auto receiver = std::make_shared<Connection>(io, ringgrad::transport::net::Fd(sv[1]), 1, 0, 2000ms, 0us);
  std::vector<std::byte> out(100000), in(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i * 13);

  set_non_blocking(receiver->fd(), true);  // the watch's window, as the receive starts
  std::thread peer([&] {
    std::this_thread::sleep_for(50ms);
    set_non_blocking(receiver->fd(), false);  // the window closes
    std::this_thread::sleep_for(150ms);
    Op send = ringgrad::test::channel_op(Direction::send, out, 7);
    try {
      sender->channel(Direction::send).run(send);
    } catch (const ringgrad::transport::TransportError&) {
      // the receiver already failed the connection: its error is the one checked below
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  Op recv = ringgrad::test::channel_op(Direction::recv, in, 7);
  std::string error;
  try {
    receiver->channel(Direction::recv).run(recv);
  } catch (const ringgrad::transport::TransportError& e) {
    error = e.what();
  }
  const auto waited = std::chrono::steady_clock::now() - t0;
  peer.join();
  CHECK(error.empty());
  CHECK(waited >= 150ms);  // it waited for the message instead of failing at once
  CHECK(std::memcmp(in.data(), out.data(), out.size()) == 0);
  sender->close();
  receiver->close();
}
