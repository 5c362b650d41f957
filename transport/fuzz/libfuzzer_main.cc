// libFuzzer's entry point for one target, chosen at compile time with
// -DRINGGRAD_FUZZ_TARGET=wire or =store (see scripts/fuzz_transport.sh).

#include "transport/fuzz/fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ringgrad::transport::fuzz::RINGGRAD_FUZZ_TARGET(data, size);
}
