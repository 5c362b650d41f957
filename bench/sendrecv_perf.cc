// sendrecv_perf: nccl-tests' sendrecv on ringgrad: every rank sends to rank+1 while receiving from
// rank-1, as one batched send/recv; busbw = algbw (flags: --help; run under ringgrad-run).
#include "bench/perf/perf_driver.h"

int main(int argc, char** argv) { return ringgrad::bench::run_perf(ringgrad::collectives::CollKind::kBatchSendRecv, argc, argv); }
