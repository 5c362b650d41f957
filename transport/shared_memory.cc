// POSIX shared memory and futexes: segments created or opened by name, mapped and unlinked by
// their owner, a sweep of a dead process's leftovers in /dev/shm, and shared (not private) futex
// waits and wakes so that processes wake each other.
#include "transport/shared_memory.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "transport/error.h"

namespace ringgrad::transport {
namespace {

std::byte* map(int fd, std::size_t bytes, const std::string& name) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw TransportError(fmt::format("cannot map shared memory {}: {}", name, std::strerror(err)));
  return static_cast<std::byte*>(p);
}

}  // namespace

SharedMemory SharedMemory::create(const std::string& name, std::size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw TransportError(fmt::format("cannot create shared memory {}: {}", name, std::strerror(errno)));
  // Reserve the pages now: a segment merely sized (ftruncate) on a full /dev/shm (a container's
  // 64 MiB, say) would kill the process with SIGBUS at its first touch instead of failing here.
  if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    throw TransportError(fmt::format("cannot reserve {} bytes of shared memory for {}: {}", bytes, name, std::strerror(err)));
  }
  try {
    return SharedMemory(name, map(fd, bytes, name), bytes, true);
  } catch (...) {
    ::shm_unlink(name.c_str());
    throw;
  }
}

SharedMemory SharedMemory::open(const std::string& name, std::size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) throw TransportError(fmt::format("cannot open shared memory {}: {}", name, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) < bytes) {
    ::close(fd);
    throw TransportError(fmt::format("shared memory {} holds {} bytes, expected {}", name, st.st_size, bytes));
  }
  return SharedMemory(name, map(fd, bytes, name), bytes, false);
}

SharedMemory::~SharedMemory() {
  unlink();
  if (data_ != nullptr) ::munmap(data_, size_);
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : name_(std::move(other.name_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      owner_(std::exchange(other.owner_, false)) {}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    SharedMemory old(std::move(*this));
    name_ = std::move(other.name_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owner_ = std::exchange(other.owner_, false);
  }
  return *this;
}

void SharedMemory::unlink() {
  if (owner_) ::shm_unlink(name_.c_str());
  owner_ = false;
}

std::string unique_segment_name(const std::string& what) {
  std::random_device device;
  const std::uint64_t nonce = (std::uint64_t{device()} << 32) | device();
  return fmt::format("/ringgrad-{}-{}-{:016x}", ::getpid(), what, nonce);
}

void remove_segments_of(long pid) {
  const std::string prefix = fmt::format("ringgrad-{}-", pid);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec))
    if (const std::string name = entry.path().filename().string(); name.starts_with(prefix))
      ::shm_unlink(("/" + name).c_str());
}

// FUTEX_WAIT without FUTEX_PRIVATE_FLAG: the kernel keys the wait on the physical page, so a
// process that maps the same segment at another address wakes it.
void futex_wait(std::uint32_t* word, std::uint32_t expected, std::chrono::microseconds timeout) {
  const auto us = timeout.count();
  timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  ::syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);  // EAGAIN, EINTR, ETIMEDOUT: the caller looks again
}

void futex_wake(std::uint32_t* word) { ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

}  // namespace ringgrad::transport
