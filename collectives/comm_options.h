// CommOptions: a Communicator's settings, each with the environment variable that sets it
// (RINGGRAD_CHECK, RINGGRAD_ALGO, RINGGRAD_CHUNK_BYTES, RINGGRAD_BACKEND, RINGGRAD_SHM,
// RINGGRAD_SHM_LINK, RINGGRAD_SHM_POLL_US, RINGGRAD_SHM_STREAM, RINGGRAD_DEVICE_CHUNK_BYTES), as
// NCCL_* variables set NCCL's.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

#include "collectives/algo.h"
#include "collectives/cost_model.h"
#include "collectives/links/shm_copy.h"
#include "collectives/links/shm_peers.h"

namespace ringgrad::collectives {

struct CommOptions {
  /// Before each collective, every rank sends a 48-byte header of its call to every other and
  /// all compare (a small call's data rides with it: check.h). RINGGRAD_CHECK=0 turns it off,
  /// on every rank alike (the Communicator compares this setting once, as it starts).
  bool check_args = true;
  /// Default algorithm for calls that pass Algo::kAuto: RINGGRAD_ALGO=ring|tree|hd|auto. A
  /// collective that lacks the named algorithm falls back to auto.
  Algo algo = Algo::kAuto;
  /// Transfers travel in pieces of this many bytes (a multiple of 8, 4 KiB to 1 GiB):
  /// RINGGRAD_CHUNK_BYTES.
  std::size_t chunk_bytes = 128 << 10;
  /// Constants for Algo::kAuto; see calibrate(). Device calls use the same model.
  CostModel model{};
  /// Who runs the calls: RINGGRAD_BACKEND=ringgrad|nccl (device buffers)|mpi (host buffers).
  Backend backend = Backend::kRinggrad;
  /// Piece size of device transfers (a multiple of 8, 4 KiB to 1 GiB): RINGGRAD_DEVICE_CHUNK_BYTES. Each
  /// same-host peer gets an inbox of 4 pieces in device memory.
  std::size_t device_chunk_bytes = 4 << 20;
  /// Host-memory collectives between ranks that all share one host go through shared memory
  /// (links/shm_peers.h) instead of loopback TCP: RINGGRAD_SHM=0 keeps TCP. Point-to-point
  /// send/recv always use TCP.
  bool shared_memory = true;
  /// Which Link runs collectives over shared memory: RINGGRAD_SHM_LINK=fast (ShmLink,
  /// links/shm_link.h, the default) or plain (PlainShmLink, links/plain_shm_link.h: one slot a
  /// peer, no tricks, the reference to read and measure the fast one against). Every rank must
  /// pick the same (else TransportError as shared memory is set up).
  ShmLinkKind shm_link = ShmLinkKind::kFast;
  /// How long a rank that waits on a peer over the fast link polls before it sleeps:
  /// RINGGRAD_SHM_POLL_US (microseconds, 0 to 1000000). Unset: shm_poll_default(), from the
  /// ranks and CPUs.
  std::optional<std::chrono::microseconds> shm_poll;
  /// How a rank writes pieces into its peers' inboxes over the fast link (links/shm_copy.h):
  /// RINGGRAD_SHM_STREAM=0 plain stores, 1 streaming stores; unset, plain unless they measure slow.
  ShmStores shm_stores = ShmStores::kAuto;

  /// Defaults overridden by the environment variables above; throws std::invalid_argument
  /// naming the variable and the accepted range.
  static CommOptions from_env();
  /// Throws std::invalid_argument when a chunk size is out of range or not a multiple of 8.
  void validate() const;
};

/// The environment variable `name` as a whole number, `fallback` when unset or empty. Digits
/// only; anything else ("-8", " 5", "abc") or a number past 2^64 throws std::invalid_argument
/// naming the variable.
std::size_t env_size(const char* name, std::size_t fallback);

}  // namespace ringgrad::collectives
