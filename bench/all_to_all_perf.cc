// all_to_all_perf: nccl-tests' all_to_all sweep on ringgrad (flags: --help; run under ringgrad-run).
#include "bench/perf/perf_driver.h"

int main(int argc, char** argv) { return ringgrad::bench::run_perf(ringgrad::collectives::CollKind::kAllToAll, argc, argv); }
