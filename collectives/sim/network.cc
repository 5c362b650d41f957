// Network: matching sends with receives, and each message's way across its hops.
#include "collectives/sim/network.h"

#include <algorithm>
#include <cstring>

namespace ringgrad::collectives::sim {
std::shared_ptr<Message> Network::Fifo::pop() {
  if (empty()) return nullptr;
  std::shared_ptr<Message> m = std::move(items[head++]);
  if (empty()) items.clear(), head = 0;
  return m;
}

void Network::forget_if_idle(int dst, int src) {
  Mailbox& box = boxes_[static_cast<std::size_t>(dst)];
  const auto it = box.find(src);
  if (it->second.unexpected.empty() && it->second.posted.empty() && it->second.ahead == 0) box.erase(it);
}

Network::Network(const Topology& topology, Engine& engine, bool payload, std::size_t window)
    : topology_(topology), engine_(engine), payload_(payload), window_(window) {
  for (int h = 0; h < topology.hop_count(); ++h) beta_.push_back(topology.hop_beta(h));
  reset();
}

void Network::reset() {
  boxes_.assign(static_cast<std::size_t>(topology_.world_size()), Mailbox{});
  free_.assign(beta_.size(), 0.0);
}

std::shared_ptr<Message> Network::send(int src, int dst, const void* data, std::size_t bytes) {
  Pair& pair = boxes_[static_cast<std::size_t>(dst)][src];
  std::shared_ptr<Message> m = pair.posted.pop();
  const bool receive_posted = m != nullptr;
  if (!receive_posted) {
    m = std::make_shared<Message>();
    m->src = src;
    m->dst = dst;
    pair.unexpected.items.push_back(m);
  }
  m->sent = true;
  m->bytes = bytes;
  if (payload_ && data) {
    const auto* p = static_cast<const std::byte*>(data);
    m->payload.assign(p, p + bytes);
  }
  m->path = topology_.path(src, dst);
  m->order = engine_.next_order();
  const double now = engine_.clock(src);
  m->sent_at = now;
  if (receive_posted) {
    depart(m, std::max(now, m->posted_at));
  } else if (pair.waiting == 0 && pair.ahead + bytes <= window_) {  // ahead of its receive
    pair.ahead += bytes;
    depart(m, now);
  } else {
    ++pair.waiting;  // leaves when its receive is posted
  }
  if (receive_posted) forget_if_idle(dst, src);
  return m;
}

std::shared_ptr<Message> Network::post_receive(int dst, int src) {
  Pair& pair = boxes_[static_cast<std::size_t>(dst)][src];
  const double now = engine_.clock(dst);
  std::shared_ptr<Message> m = pair.unexpected.pop();
  if (m) {
    if (m->departed) {
      pair.ahead -= m->bytes;
    } else {
      --pair.waiting;
      depart(m, std::max(now, m->sent_at));
    }
    // The window has room again: messages waiting behind this one leave now, in order, as far
    // as they fit.
    for (std::size_t i = pair.unexpected.head; i < pair.unexpected.items.size(); ++i) {
      const std::shared_ptr<Message>& next = pair.unexpected.items[i];
      if (next->departed) continue;
      if (pair.ahead + next->bytes > window_) break;
      pair.ahead += next->bytes;
      --pair.waiting;
      depart(next, std::max(now, next->sent_at));
    }
    forget_if_idle(dst, src);
    return m;
  }
  m = std::make_shared<Message>();
  m->src = src;
  m->dst = dst;
  m->posted_at = now;
  pair.posted.items.push_back(m);
  return m;
}

void Network::depart(const std::shared_ptr<Message>& m, double t) {
  m->departed = true;
  m->tail = t;
  if (m->path.size == 0) {
    sent_off(*m, t);
    return deliver(*m, t);
  }
  m->in_flight = m;
  engine_.at(t, m->order, [this, p = m.get()] { advance(p); });
}

void Network::advance(Message* m) {
  const auto h = static_cast<std::size_t>(m->path.hops[static_cast<std::size_t>(m->next_hop)]);
  const double beta = beta_[h], alpha = m->next_hop == 0 ? m->path.alpha : 0.0;
  const double start = std::max(engine_.now(), free_[h]);
  const double tail = std::max(start + static_cast<double>(m->bytes) * beta, m->tail);
  free_[h] = tail;
  m->tail = tail + alpha;
  if (m->next_hop == 0) sent_off(*m, tail);
  if (++m->next_hop < m->path.size)
    engine_.at(start + alpha, m->order, [this, m] { advance(m); });
  else
    deliver(*m, m->tail);
}

void Network::sent_off(Message& m, double at) {
  m.left = true;
  m.left_at = at;
  if (m.sender_waits) engine_.wake(m.src);
}

void Network::deliver(Message& m, double at) {
  m.delivered = true;
  m.arrival = at;
  if (m.receiver_waits) engine_.wake(m.dst);
  const std::shared_ptr<Message> last = std::move(m.in_flight);  // may free m: nothing follows
}

void Network::wait(int rank, Message& m) {
  double& clock = engine_.clock(rank);
  if (rank != m.dst) {  // the sender
    while (!m.left) {
      m.sender_waits = true;
      engine_.block(rank, "its message to leave for rank", m.dst);
    }
    clock = std::max(clock, m.left_at);
    return;
  }
  while (!m.delivered) {
    m.receiver_waits = true;
    engine_.block(rank, "a message from rank", m.src);
  }
  clock = std::max(clock, m.arrival);
}

}  // namespace ringgrad::collectives::sim
