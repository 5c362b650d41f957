// Network: messages between simulated ranks, moving hop by hop in virtual time.
//
// Matching is MPI's: rank d's k-th receive from rank s takes s's k-th send to d, whichever is
// posted first (a receive posted early waits as an empty message). Flow control is a window per
// pair, as NCCL's (8 slots of a chunk per peer) and the sockets' buffers: a message leaves when
// it is sent if the bytes s has sent d ahead of d's receives, with it, fit `window`, and no
// earlier message of the pair waits; otherwise when d's receives make room for it (a receive
// that takes a message sent ahead frees its bytes at once: the credit's way back is not
// timed), or its own receive is posted. Pipelined pieces thus flow ahead of their receives,
// while a large message does not contend with what its receiver is still taking in. A message enters its path's first hop
// when it leaves; each hop is an event at the time the message's head reaches it (engine.h), so
// a hop serves messages in the order they arrive:
//
//   start = max(head arrives, hop free)          the hop carries one message at a time
//   tail  = max(start + bytes * beta, tail left the previous hop)
//   hop free again at tail; head and tail move on, after the path's alpha at the first hop
//
// and the message is delivered when its tail leaves the last hop. Idle hops cost
// alpha + bytes * (largest beta): the tail follows the head through every hop at once. A send
// completes when its tail has left the sender's first hop (its buffer is free again, as
// MPI_Send returns); its bytes (payload mode) are copied when it is sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "collectives/sim/engine.h"
#include "collectives/sim/topology.h"

namespace ringgrad::collectives::sim {

struct Message {
  int src = -1, dst = -1;
  std::size_t bytes = 0;
  std::vector<std::byte> payload;     // payload mode: the bytes as they were when sent
  bool sent = false;                  // false: a receive posted before its message
  bool departed = false;              // it has entered its path
  double sent_at = 0, posted_at = 0;  // when the send, and the receive, were posted
  std::uint64_t order = 0;            // the engine's order number of the send: ties at a hop go by it
  bool left = false;
  double left_at = 0;  // when its tail left the sender's first hop
  bool delivered = false;
  double arrival = 0;  // when its tail reached dst
  bool receiver_waits = false, sender_waits = false;
  Path path;  // in flight: its hops, the next one, when its tail left the last
  int next_hop = 0;
  double tail = 0;
  std::shared_ptr<Message> in_flight;  // itself from departure to delivery: the hop events hold a
                                       // plain pointer (a std::function keeps it without allocating)
};

class Network {
 public:
  /// `topology` and `engine` must outlive the network. `payload`: messages carry their bytes;
  /// `window`: bytes a rank may send a peer ahead of its receives.
  Network(const Topology& topology, Engine& engine, bool payload, std::size_t window);

  /// Rank src sends `bytes` at `data` to rank dst at src's clock.
  std::shared_ptr<Message> send(int src, int dst, const void* data, std::size_t bytes);
  /// Posts rank dst's next receive from rank src (matched in post order with src's sends to dst).
  std::shared_ptr<Message> post_receive(int dst, int src);
  /// From inside rank `rank`: m's receiver waits until m is delivered, its sender until m has
  /// left it; then the rank's clock moves to that time if it is later.
  void wait(int rank, Message& m);

  /// Forgets every message and makes every hop idle (a fresh run on the same network).
  void reset();

 private:
  // The message enters its first hop at virtual time t (now, or later).
  void depart(const std::shared_ptr<Message>& m, double t);
  void advance(Message* m);
  void sent_off(Message& m, double at);
  void deliver(Message& m, double at);

  // First in, first out; nothing allocated while empty (a std::deque allocates when made).
  struct Fifo {
    std::vector<std::shared_ptr<Message>> items;
    std::size_t head = 0;
    bool empty() const { return head == items.size(); }
    std::shared_ptr<Message> pop();  // null when empty
  };
  // Per (sender, receiver): messages sent, no receive posted yet; or receives posted, nothing sent
  // yet (one of the two is empty). Keyed by sender in the receiver's map, and only while either
  // holds something: a tree's parent may hold thousands of pieces from each child, while a rank
  // of an all-to-all on 4,096 ranks meets every other rank once.
  struct Pair {
    Fifo unexpected, posted;
    std::size_t ahead = 0;  // bytes of unexpected messages that have left
    int waiting = 0;        // unexpected messages that wait for their receives
  };
  using Mailbox = std::unordered_map<int, Pair>;
  // Drops the pair (dst, src) when it holds nothing.
  void forget_if_idle(int dst, int src);
  const Topology& topology_;
  Engine& engine_;
  bool payload_;
  std::size_t window_;
  std::vector<Mailbox> boxes_;
  std::vector<double> beta_;  // per hop: seconds per byte
  std::vector<double> free_;  // per hop: when it can start the next message
};

}  // namespace ringgrad::collectives::sim
