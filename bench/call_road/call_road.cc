// The road of one call: which functions run, in order, when rank 0 makes one blocking host
// all_reduce (after a few of the same size, so that the road is the steady one). Built by
// scripts/call_road.sh against a copy of the library compiled with -finstrument-functions:
// the compiler then calls __cyg_profile_func_enter/exit around every function, and this file
// records those calls, on the calling thread only, while the traced call runs. road.py turns
// the record into the files the call enters.
//   call_road OUT_PREFIX BYTES...   (under ringgrad-run; writes OUT_PREFIX.BYTES on rank 0;
//                                    BYTES a multiple of 4: float32 elements)
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <pthread.h>

#include "collectives/communicator.h"
#include "transport/config.h"

namespace {

constexpr std::size_t kMaxEvents = 1 << 20;
std::atomic<bool> recording{false};
pthread_t recorded_thread;
std::vector<std::pair<char, void*>>* events = nullptr;  // 'E' enter or 'X' exit, function address

}  // namespace

extern "C" {
__attribute__((no_instrument_function)) void __cyg_profile_func_enter(void* fn, void*) {
  if (recording.load(std::memory_order_relaxed) && pthread_equal(pthread_self(), recorded_thread) &&
      events->size() < kMaxEvents)
    events->emplace_back('E', fn);
}
__attribute__((no_instrument_function)) void __cyg_profile_func_exit(void* fn, void*) {
  if (recording.load(std::memory_order_relaxed) && pthread_equal(pthread_self(), recorded_thread) &&
      events->size() < kMaxEvents)
    events->emplace_back('X', fn);
}
}

int main(int argc, char** argv) {
  using namespace ringgrad;
  if (argc < 3) {
    std::fprintf(stderr, "usage: call_road OUT_PREFIX BYTES...\n");
    return 2;
  }
  events = new std::vector<std::pair<char, void*>>();
  events->reserve(kMaxEvents);  // no allocation while recording
  collectives::Communicator comm(transport::Config::from_env(), collectives::CommOptions::from_env());
  for (int i = 2; i < argc; ++i) {
    const std::size_t bytes = std::stoull(argv[i]);
    if (bytes == 0 || bytes % sizeof(float) != 0) {
      std::fprintf(stderr, "call_road: %zu bytes is not a whole number of float32 elements\n", bytes);
      return 2;
    }
    std::vector<float> x(bytes / sizeof(float), 1.0f);
    const collectives::Buffer b{x.data(), x.size(), collectives::DType::kFloat32};
    for (int warm = 0; warm < 5; ++warm) comm.all_reduce(b, b, collectives::ReduceOp::SUM);
    events->clear();
    recorded_thread = pthread_self();
    recording = comm.rank() == 0;
    comm.all_reduce(b, b, collectives::ReduceOp::SUM);
    recording = false;
    if (comm.rank() != 0) continue;
    const std::string path = std::string(argv[1]) + "." + argv[i];
    FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) {
      std::perror(path.c_str());
      return 1;
    }
    if (events->size() == kMaxEvents) std::fprintf(out, "# truncated at %zu events\n", kMaxEvents);
    for (const auto& [kind, fn] : *events) std::fprintf(out, "%c %p\n", kind, fn);
    std::fclose(out);
  }
}
