// CPU storage comes from a heap that keeps what a step frees for the next step: activations
// allocated again reuse the same memory instead of new pages the kernel must fault in and zero.
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tensor/storage.h"

using namespace ringgrad;

static long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

TEST_CASE("a step's freed activations are reused by the next step instead of faulted in again") {
  // 16 MiB held at once, in blocks over glibc's initial mmap threshold (128 KiB), then freed:
  // the shape of a training step's activations.
  if (const char* own = std::getenv("GLIBC_TUNABLES"); own != nullptr && std::strstr(own, "glibc.malloc.") != nullptr)
    return;  // the heap runs by the caller's own settings
  constexpr std::size_t kBlock = 1 << 20, kBlocks = 16;
  const auto step = [&] {
    std::vector<Storage> activations;
    for (std::size_t i = 0; i < kBlocks; ++i) activations.emplace_back(kBlock);  // zeroed: every page touched
  };
  for (int i = 0; i < 5; ++i) step();  // the heap settles into a layout that fits the step
  const long before = minor_page_faults();
  for (int i = 0; i < 5; ++i) step();
  const long pages_per_step = static_cast<long>(kBlock * kBlocks / 4096);
  // glibc's defaults trim the freed top of the heap after every step: over 5 * 3000 faults.
  CHECK(minor_page_faults() - before < pages_per_step / 4);
}
