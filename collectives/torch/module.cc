// ringgrad_torch: the Python module. Importing it registers "ringgrad" with
// torch.distributed.Backend.register_backend, so that dist.init_process_group("ringgrad") and
// dist.new_group(backend="ringgrad") create a ProcessGroupRinggrad (process_group.h).
//   PYTHONPATH=build/python python3 -c 'import ringgrad_torch'
#include <stdexcept>

#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "collectives/torch/process_group.h"

namespace {

namespace py = pybind11;

// torch's creator signature: (store, rank, world_size, timeout), the store already prefixed
// for the group being made.
c10::intrusive_ptr<c10d::ProcessGroup> create_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                             int world_size, std::chrono::milliseconds timeout) {
  return c10::make_intrusive<ringgrad::torch_backend::ProcessGroupRinggrad>(store, rank, world_size, timeout);
}

}  // namespace

PYBIND11_MODULE(ringgrad_torch, m) {
  m.doc() = "ringgrad's collectives as a torch.distributed backend: import it, then init_process_group('ringgrad')";
  py::module_ dist = py::module_::import("torch.distributed");  // torch's types first: Store, ProcessGroup
  m.def("create_process_group", &create_process_group, py::arg("store"), py::arg("rank"), py::arg("world_size"),
        py::arg("timeout"), py::call_guard<py::gil_scoped_release>(),
        "Joins the group through `store` and returns its ProcessGroup (what torch calls for 'ringgrad').");
  m.def(
      "host_path",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& group) {
        auto* ours = dynamic_cast<ringgrad::torch_backend::ProcessGroupRinggrad*>(group.get());
        if (ours == nullptr) throw std::invalid_argument("host_path: not a ringgrad process group");
        return ours->communicator().host_path();
      },
      py::arg("group"),
      "How a ringgrad group's host collectives travel: 'shared memory' or 'TCP (why not)'; empty before the first.");
  dist.attr("Backend").attr("register_backend")("ringgrad", m.attr("create_process_group"));
}
