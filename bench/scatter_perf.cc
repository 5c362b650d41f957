// scatter_perf: nccl-tests' scatter sweep on ringgrad (flags: --help; run under ringgrad-run).
#include "bench/perf/perf_driver.h"

int main(int argc, char** argv) { return ringgrad::bench::run_perf(ringgrad::collectives::CollKind::kScatter, argc, argv); }
