// CPU storage comes from a block cache that keeps what a step frees for the next step:
// activations allocated again reuse the same memory instead of new pages the kernel must fault
// in and zero.
#include <sys/resource.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "tensor/block_cache.h"
#include "tensor/storage.h"

using namespace ringgrad;

static long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST_CASE("a step's freed activations are reused by the next step instead of faulted in again") {
  // 16 MiB held at once, in blocks over glibc's mmap threshold (128 KiB), then freed: the
  // shape of a training step's activations.
  constexpr std::size_t kBlock = (1 << 20) - 4096, kBlocks = 16;  // under 1 MiB: no 2 MiB rounding
  const auto step = [&] {
    std::vector<Storage> activations;
    for (std::size_t i = 0; i < kBlocks; ++i) activations.emplace_back(kBlock);  // zeroed: every page touched
  };
  for (int i = 0; i < 5; ++i) step();  // the cache fills with what the step needs
  const long before = minor_page_faults();
  for (int i = 0; i < 5; ++i) step();
  const long pages_per_step = static_cast<long>(kBlock * kBlocks / 4096);
  // Through glibc's defaults every block went back to the kernel on free: over 5 * 4096 faults.
  CHECK(minor_page_faults() - before < pages_per_step / 4);
}

TEST_CASE("a freed block serves the next request of its size, cleared when zeros are asked for") {
  std::byte* first = nullptr;
  {
    Storage s(1000);
    first = s.data();
    std::fill(first, first + 1000, std::byte{0x5a});
  }
  Storage again(1000);  // the same rounded size (1024 B): the block just freed
  CHECK(again.data() == first);
  CHECK(std::all_of(again.data(), again.data() + 1000, [](std::byte b) { return b == std::byte{0}; }));
  CHECK(reinterpret_cast<std::uintptr_t>(again.data()) % 64 == 0);
}

TEST_CASE("the host cache keeps no more than the most bytes ever in use at once") {
  // 64 sizes asked for once each, as sampling with a growing context does: kept, they would
  // cache 200 MiB that nothing asks for again.
  { Storage big(4 << 20); }
  for (std::size_t i = 1; i <= 64; ++i) Storage once(i * 100'000);
  const HostMemoryStats stats = host_memory_stats();
  CHECK(stats.peak_in_use >= (6'400'000 + 4095) / 4096 * 4096);
  CHECK(stats.cached <= stats.peak_in_use);
  CHECK(stats.cached >= (4 << 20));  // what fits stays: the largest block freed while under the peak
}

TEST_CASE("the block cache rounds sizes up, hands back the last block freed, and releases all") {
  CHECK(BlockCache::round(0) == 512);
  CHECK(BlockCache::round(512) == 512);
  CHECK(BlockCache::round(513) == 1024);
  CHECK(BlockCache::round((1 << 20) - 1) == (1 << 20));
  CHECK(BlockCache::round(1 << 20) == (2 << 20));
  CHECK(BlockCache::round((2 << 20) + 1) == (4 << 20));

  BlockCache cache;
  int a = 0, b = 0, c = 0;
  CHECK(cache.take(512) == nullptr);
  cache.give(&a, 512);
  cache.give(&b, 512);
  cache.give(&c, 1024);
  CHECK(cache.cached() == 2048);
  CHECK(cache.take(512) == &b);  // most recently freed first
  CHECK(cache.cached() == 1536);
  std::vector<std::pair<void*, std::size_t>> released;
  cache.release_all([&](void* block, std::size_t size) { released.emplace_back(block, size); });
  std::sort(released.begin(), released.end());
  std::vector<std::pair<void*, std::size_t>> expected{{&a, 512}, {&c, 1024}};
  std::sort(expected.begin(), expected.end());
  CHECK(released == expected);
  CHECK(cache.cached() == 0);
  CHECK(cache.take(512) == nullptr);
}

TEST_CASE("reset_peak_host_memory_stats starts the peak again from the bytes in use") {
  { Storage big(4 << 20); }  // a peak from before the reset
  reset_peak_host_memory_stats();
  const std::size_t start = host_memory_stats().in_use;
  CHECK(host_memory_stats().peak_in_use == start);
  {
    Storage a(256 << 10), b(128 << 10);  // 384 KiB at once, whole multiples of the 512 B unit
  }
  Storage c(64 << 10);
  const HostMemoryStats stats = host_memory_stats();
  CHECK(stats.in_use == start + (64 << 10));
  CHECK(stats.peak_in_use == start + (384 << 10));
}
