// allowed_cpus: the CPUs in this process's affinity mask (sched_getaffinity), in ascending order.
#include "transport/cpus.h"

#include <sched.h>

namespace ringgrad::transport {

std::vector<int> allowed_cpus() {
  cpu_set_t allowed;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  return cpus;
}

}  // namespace ringgrad::transport
