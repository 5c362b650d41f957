// Rendezvous: builds the full mesh of TCP connections of a job through the Store. Every rank
// listens on an ephemeral port of its interface address and publishes "address:port"; each
// rank connects to the lower ranks and accepts the higher ones, so each pair gets one
// connection. A hello (job id, job token, rank, world size) opens every connection and the
// acceptor refuses, with a logged reason naming the address it came from, anything that does
// not belong: no or a wrong job token, another job, a rank that should not connect to it, a
// duplicate, a malformed hello, silence until the rendezvous deadline.
#pragma once

#include <vector>

#include "transport/config.h"
#include "transport/net.h"
#include "transport/store.h"

namespace ringgrad::transport {

/// Returns one connected socket per rank (index = peer rank; the entry of config.rank is empty).
/// Throws TransportError when a peer refuses this rank, or the mesh is incomplete at
/// config.timeout, naming the ranks still missing.
std::vector<net::Fd> connect_mesh(const Config& config, Store& store);

/// The store key under which rank publishes its listening address.
std::string address_key(int rank);

}  // namespace ringgrad::transport
