// Block cache: free lists of memory blocks by size, the core of a caching allocator. A training
// step frees its activations and asks for the same sizes again in the next step, so a freed
// block is kept and handed to the next request of its size, most recently freed first (the
// one likeliest still in cache). Sizes are rounded up (512 B below 1 MiB, 2 MiB from there) so
// near sizes share blocks. Both the host heap (storage.cc) and the GPU allocator
// (cuda_allocator.cc) keep their blocks here; the caller supplies the raw allocation and the
// lock.
#pragma once

#include <algorithm>
#include <cstddef>
#include <unordered_map>
#include <vector>

namespace ringgrad {

class BlockCache {
 public:
  /// The size a request of `nbytes` is served with: at least 1 byte, rounded up.
  static std::size_t round(std::size_t nbytes) {
    constexpr std::size_t kSmall = 512, kLarge = 2 << 20, kLargeFrom = 1 << 20;
    const std::size_t unit = nbytes < kLargeFrom ? kSmall : kLarge;
    return std::max<std::size_t>(1, (nbytes + unit - 1) / unit) * unit;
  }

  /// A cached block of `size` bytes (a value of round()), or nullptr when there is none.
  void* take(std::size_t size) {
    auto it = free_blocks_.find(size);
    if (it == free_blocks_.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    return block;
  }

  /// Keeps `block` of `size` bytes (a value of round()) for a later take().
  void give(void* block, std::size_t size) {
    free_blocks_[size].push_back(block);
    cached_ += size;
  }

  /// Hands every cached block to `release(block, size)` and forgets them: what an allocator
  /// does before it reports running out of memory.
  template <typename Release>
  void release_all(Release release) {
    for (auto& [size, blocks] : free_blocks_) {
      for (void* block : blocks) release(block, size);
      blocks.clear();
    }
    cached_ = 0;
  }

  /// Bytes held in free blocks.
  std::size_t cached() const { return cached_; }

 private:
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks_;  // rounded size -> blocks
  std::size_t cached_ = 0;
};

}  // namespace ringgrad
