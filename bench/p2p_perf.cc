// p2p_perf: point-to-point latency and bandwidth between two ranks, in the style of OSU's
// osu_latency and osu_bw, over ringgrad's transport and, in the same processes over the same
// network, over a plain blocking TCP socket, so the transport's overhead shows in one table.
//   ringgrad-run --nproc-per-node 2 build/bin/p2p_perf        (or two nodes: --nnodes 2 ...)
// latency = half the ping-pong round trip (us); bandwidth = window x size bytes sent back to
// back, then a 4-byte ack, in GB/s (1e9 bytes/s). Each figure is the best of --reps runs, the
// runs of the plain socket and of the transport taking turns so that load from other programs
// on the machine hits both alike.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/numbers.h"
#include "cli/parse.h"
#include "transport/transport.h"

namespace {

using Clock = std::chrono::steady_clock;
using ringgrad::transport::Request;
using ringgrad::transport::Transport;

// --- The baseline: one plain blocking TCP socket between the two ranks ------------------------

class PlainSocket {
 public:
  // Rank 1 listens on the address its transport uses and publishes it; rank 0 connects.
  explicit PlainSocket(Transport& t) {
    if (t.rank() == 1) {
      int listener = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      socklen_t len = sizeof addr;
      if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 1) != 0 ||
          ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
        throw std::runtime_error(fmt::format("plain socket: listen: {}", std::strerror(errno)));
      t.store().set("p2p_perf/plain_port", std::to_string(ntohs(addr.sin_port)));
      fd_ = ::accept(listener, nullptr, nullptr);
      ::close(listener);
    } else {
      // Rank 1's transport address names the host; the plain socket goes to the same host.
      std::string peer = t.store().get("ringgrad/addr/1");
      std::string host = peer.substr(0, peer.rfind(':'));
      uint16_t port = static_cast<uint16_t>(std::stoi(t.store().get("p2p_perf/plain_port")));
      fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port);
      ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
      if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
        throw std::runtime_error(fmt::format("plain socket: connect to {}:{}: {}", host, port, std::strerror(errno)));
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~PlainSocket() { ::close(fd_); }
  PlainSocket(const PlainSocket&) = delete;
  PlainSocket& operator=(const PlainSocket&) = delete;

  void send(const std::byte* data, size_t size) {
    for (size_t done = 0; done < size;) {
      ssize_t n = ::send(fd_, data + done, size - done, MSG_NOSIGNAL);
      if (n <= 0) throw std::runtime_error("plain socket: send failed");
      done += static_cast<size_t>(n);
    }
  }
  void recv(std::byte* data, size_t size) {
    for (size_t done = 0; done < size;) {
      ssize_t n = ::recv(fd_, data + done, size - done, MSG_WAITALL);
      if (n <= 0) throw std::runtime_error("plain socket: recv failed");
      done += static_cast<size_t>(n);
    }
  }

 private:
  int fd_ = -1;
};

// --- Measurements ------------------------------------------------------------------------------

// Runs each body once to warm up, then all of them in turn `reps` times; returns each one's
// shortest time in seconds.
std::vector<double> best_of(int reps, const std::vector<std::function<void()>>& bodies) {
  std::vector<double> best(bodies.size(), 1e300);
  for (const auto& body : bodies) body();
  for (int r = 0; r < reps; ++r)
    for (size_t b = 0; b < bodies.size(); ++b) {
      auto start = Clock::now();
      bodies[b]();
      best[b] = std::min(best[b], std::chrono::duration<double>(Clock::now() - start).count());
    }
  return best;
}

int latency_iters(size_t size) { return static_cast<int>(std::clamp<size_t>((size_t{256} << 20) / std::max<size_t>(size, 1), 20, 5000)); }
int bw_loops(size_t size) { return static_cast<int>(std::clamp<size_t>((size_t{1} << 30) / (size * 64), 2, 20)); }

struct Row {
  double lat_plain, lat_ringgrad, bw_plain, bw_send, bw_isend;
};

Row measure(Transport& t, PlainSocket& plain, size_t size, int reps, int window) {
  std::vector<std::byte> buffer(size, std::byte{1}), ack(4);
  const int peer = 1 - t.rank();
  const bool r0 = t.rank() == 0;
  const int iters = latency_iters(size), loops = bw_loops(size);
  Row row{};

  auto ping_pong = [&](auto&& send, auto&& recv) {
    return [&, send, recv] {
      for (int i = 0; i < iters; ++i) {
        if (r0) send(), recv();
        else recv(), send();
      }
    };
  };
  auto lat = best_of(reps, {ping_pong([&] { plain.send(buffer.data(), size); }, [&] { plain.recv(buffer.data(), size); }),
                            ping_pong([&] { t.send(peer, buffer, 1); }, [&] { t.recv(peer, buffer, 1); })});
  row.lat_plain = lat[0] / iters / 2 * 1e6;
  row.lat_ringgrad = lat[1] / iters / 2 * 1e6;

  // osu_bw: rank 0 sends `window` messages back to back, rank 1 answers with a 4-byte ack.
  auto bandwidth = [&](auto&& send_window, auto&& recv_window, auto&& send_ack, auto&& recv_ack) {
    return [&, send_window, recv_window, send_ack, recv_ack] {
      for (int l = 0; l < loops; ++l) {
        if (r0) send_window(), recv_ack();
        else recv_window(), send_ack();
      }
    };
  };
  // The asynchronous window shares one buffer: sends only read it, receives complete in order.
  auto async_window = [&](bool send) {
    std::vector<Request> requests;
    requests.reserve(static_cast<size_t>(window));
    for (int w = 0; w < window; ++w) requests.push_back(send ? t.isend(peer, buffer, 4) : t.irecv(peer, buffer, 4));
    for (auto& r : requests) r.wait();
  };
  auto bw = best_of(reps, {bandwidth([&] { for (int w = 0; w < window; ++w) plain.send(buffer.data(), size); },
                           [&] { for (int w = 0; w < window; ++w) plain.recv(buffer.data(), size); },
                           [&] { plain.send(ack.data(), 4); }, [&] { plain.recv(ack.data(), 4); }),
                           bandwidth([&] { for (int w = 0; w < window; ++w) t.send(peer, buffer, 2); },
                          [&] { for (int w = 0; w < window; ++w) t.recv(peer, buffer, 2); },
                          [&] { t.send(peer, ack, 3); }, [&] { t.recv(peer, ack, 3); }),
                           bandwidth([&] { async_window(true); }, [&] { async_window(false); }, [&] { t.send(peer, ack, 5); },
                                     [&] { t.recv(peer, ack, 5); })});
  const double bytes = static_cast<double>(size) * window * loops;
  row.bw_plain = bytes / bw[0] / 1e9;
  row.bw_send = bytes / bw[1] / 1e9;
  row.bw_isend = bytes / bw[2] / 1e9;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"p2p_perf: latency and bandwidth of ringgrad's transport beside plain TCP sockets (2 ranks)"};
  std::vector<size_t> sizes = {8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  int reps = 3, window = 16;
  // Each rank holds one buffer of the message size; 1 GiB is 16 times the largest default.
  constexpr size_t kMaxSize = size_t{1} << 30;
  app.add_option("--sizes", sizes, "message sizes, bytes, 1 to 1073741824 (1 GiB); a list: 8,64 or 8 64")
      ->delimiter(',')
      ->check(ringgrad::cli::between(1, static_cast<std::int64_t>(kMaxSize)));
  app.add_option("--reps", reps, "runs per figure, 1 or more; the best is reported")
      ->check(ringgrad::cli::between(1, std::numeric_limits<int>::max()));
  app.add_option("--window", window, "messages in flight per bandwidth round (osu_bw's window), 1 to 65536")
      ->check(ringgrad::cli::between(1, 1 << 16));
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;

  try {
    Transport t(ringgrad::transport::Config::from_env());
    if (t.world_size() != 2) throw std::runtime_error("p2p_perf runs on exactly 2 ranks");
    PlainSocket plain(t);
    if (t.rank() == 0) {
      fmt::print("# p2p_perf: 2 ranks; plain = one blocking TCP socket (TCP_NODELAY) between the same processes\n");
      fmt::print("# latency: half round trip (us); bandwidth: window of {} messages + ack (GB/s); best of {}\n", window, reps);
      fmt::print("# rg/plain: ringgrad's figure over the plain socket's; for latency below 1 means ringgrad is faster, "
                 "for bandwidth above 1\n");
      fmt::print("{:>10} {:>11} {:>11} {:>8} {:>10} {:>10} {:>8} {:>11} {:>8}\n", "size(B)", "lat_plain", "lat_rg", "rg/plain",
                 "bw_plain", "bw_rg_send", "rg/plain", "bw_rg_isend", "rg/plain");
    }
    for (size_t size : sizes) {
      Row r;
      try {
        r = measure(t, plain, size, reps, window);
      } catch (const std::bad_alloc&) {
        throw std::runtime_error(fmt::format("out of memory for a message of --sizes {} bytes", size));
      }
      if (t.rank() == 0)
        fmt::print("{:>10} {:>11.2f} {:>11.2f} {:>8.2f} {:>10.3f} {:>10.3f} {:>8.2f} {:>11.3f} {:>8.2f}\n", size, r.lat_plain,
                   r.lat_ringgrad, r.lat_ringgrad / r.lat_plain, r.bw_plain, r.bw_send, r.bw_send / r.bw_plain, r.bw_isend,
                   r.bw_isend / r.bw_plain);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "p2p_perf: {}\n", e.what());
    return 1;
  }
}
