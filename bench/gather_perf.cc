// gather_perf: nccl-tests' gather sweep on ringgrad (flags: --help; run under ringgrad-run).
#include "bench/perf/perf_driver.h"

int main(int argc, char** argv) { return ringgrad::bench::run_perf(ringgrad::collectives::CollKind::kGather, argc, argv); }
