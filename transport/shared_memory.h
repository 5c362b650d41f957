// Shared memory between processes of one host: a POSIX shared-memory segment mapped into each,
// and futex waits on a 32-bit word inside it. The pieces the collectives' shared-memory path
// (collectives/links/shm_peers.h) is built from; NCCL's intra-node SHM transport and MPI's shared-
// memory channels rest on the same two system facilities.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace ringgrad::transport {

/// A shm_open segment mapped read-write. Move-only; unmapped when destroyed.
class SharedMemory {
 public:
  SharedMemory() = default;
  /// Creates the segment `name` ("/..." as shm_open wants it) of `bytes` bytes, zero-filled,
  /// its pages reserved. Throws TransportError when it exists already, /dev/shm lacks the room,
  /// or the system refuses (errno's text).
  static SharedMemory create(const std::string& name, std::size_t bytes);
  /// Maps the existing segment `name`, which must hold at least `bytes` bytes. Throws
  /// TransportError when it is not there (another host, another /dev/shm) or is smaller.
  static SharedMemory open(const std::string& name, std::size_t bytes);
  ~SharedMemory();
  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }
  /// Removes the name (once every process that needs it has mapped it): the memory lives on
  /// until the last mapping goes, and nothing is left behind when a process dies. Idempotent.
  void unlink();

 private:
  SharedMemory(std::string name, std::byte* data, std::size_t size, bool owner)
      : name_(std::move(name)), data_(data), size_(size), owner_(owner) {}
  std::string name_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool owner_ = false;  // created here and not yet unlinked
};

/// A fresh segment name for this process: "/ringgrad-<pid>-<what>-<random hex>".
std::string unique_segment_name(const std::string& what);
/// Unlinks the segments process `pid` named with unique_segment_name and left behind (it was
/// killed between creating and unlinking one). For a launcher, after a rank ended.
void remove_segments_of(long pid);

/// Sleeps while *word == expected, at most `timeout`; returns early when woken or when the
/// value already differs. Works across processes when `word` lies in shared memory.
void futex_wait(std::uint32_t* word, std::uint32_t expected, std::chrono::microseconds timeout);
/// Wakes every thread sleeping in futex_wait on `word`, in any process.
void futex_wake(std::uint32_t* word);

}  // namespace ringgrad::transport
