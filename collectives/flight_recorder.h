// FlightRecorder: a communicator's last N collectives (PyTorch's NCCL flight recorder), kept so
// that when a job hangs or fails each rank can say what it was doing: sequence number, kind,
// size, dtype, algorithm, and how far it got (queued, started, completed, failed), with times.
// It is written as JSON into RINGGRAD_FLIGHT_RECORDER_DIR (ringgrad-run sets it for every job):
// when a collective fails, and when the process gets SIGUSR1 (the launcher sends it to the
// ranks still alive when another one failed, after SIGCONT for a stopped one). ringgrad-run
// then reads the files and prints which ranks wait in which collective and which never entered
// it (transport/launcher/desync_report.h); the JSON's format is trace/flight_record.h, which both
// sides use. Recording is a few stores into a ring buffer per call.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/algo.h"
#include "collectives/dtype.h"
#include "trace/flight_record.h"

namespace ringgrad::collectives {

class FlightRecorder {
 public:
  using State = trace::CollectiveState;
  struct Entry {
    std::uint64_t seq;
    CollKind kind;
    std::uint64_t bytes;  // nccl-tests' size
    DType dtype;
    Algo algo;
    State state;
    double queued_s, started_s, ended_s;  // steady clock seconds; 0 until reached
    int thread;                           // the thread that ran it (gettid), once started
  };

  /// Keeps the last `capacity` collectives (RINGGRAD_FLIGHT_RECORDER_ENTRIES, default 2000; 0
  /// records nothing) of the communicator `who` describes ("rank 1", "rank 0 of group tp ...").
  /// Memory grows with the entries recorded, up to capacity (so a timeline of a long run may
  /// ask for millions).
  FlightRecorder(std::string who, int job_rank, std::size_t capacity);
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  /// Collective `seq` (the communicator's sequence numbers: 0, 1, 2, ... each once, in order)
  /// was queued with its size in bytes (nccl-tests' size), dtype and algorithm; then started;
  /// then ended, `ok` or failed. A seq no longer in the buffer is ignored.
  /// `and_started`: it starts at once, on this thread (a blocking call run inline): one clock read.
  void queued(std::uint64_t seq, CollKind kind, std::uint64_t bytes, DType dtype, Algo algo, bool and_started = false);
  void started(std::uint64_t seq);
  void ended(std::uint64_t seq, bool ok);

  /// The entries, oldest first, and as JSON (trace/flight_record.h); who().
  std::vector<Entry> entries() const;
  std::string json() const;
  const std::string& who() const { return who_; }
  /// How many collectives were queued so far (the next sequence number; 0 while recording is
  /// off), and the most kept.
  std::uint64_t recorded() const;
  std::size_t capacity() const { return capacity_; }
  /// Writes json() to RINGGRAD_FLIGHT_RECORDER_DIR/rank<job rank>-<n>.json when that is set;
  /// returns the path, or "" when not written.
  std::string dump() const;

 private:
  Entry* find(std::uint64_t seq);

  std::string who_;
  int job_rank_;
  int id_;  // distinguishes the files of one process's communicators
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Entry> ring_;  // entry seq at ring_[seq % capacity_]
  std::uint64_t recorded_ = 0;  // the next sequence number
};

/// The most collectives a recorder may keep: a million entries is tens of MB per communicator.
inline constexpr std::size_t kMaxFlightRecorderEntries = 1'000'000;
/// Capacity from RINGGRAD_FLIGHT_RECORDER_ENTRIES (default 2000; 0 turns recording off). Throws
/// std::invalid_argument for anything but a whole number from 0 to kMaxFlightRecorderEntries.
std::size_t flight_recorder_capacity();

}  // namespace ringgrad::collectives
