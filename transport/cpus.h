// The CPUs a process may run on: what binding (ringgrad-run --cpu-bind) splits and what the
// shared-memory path counts before it decides to poll.
#pragma once

#include <vector>

namespace ringgrad::transport {

/// The CPUs this process may run on (its affinity mask: taskset, cpusets, a launcher's
/// binding), in increasing order; empty when the kernel does not say (more CPUs than a
/// cpu_set_t holds).
std::vector<int> allowed_cpus();

}  // namespace ringgrad::transport
