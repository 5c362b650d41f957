// ProcessGroupRinggrad: the rendezvous through torch's store, the group's lifetime, the wrapping
// of each call in a TorchWork, point-to-point calls and their batches, the barrier and c10d's
// sequence numbers. The collectives' methods are in calls.cc.
#include <Python.h>  // first, as Python asks: the destructor lets go of the GIL

#include "collectives/torch/process_group.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <random>
#include <sstream>

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/sequence_num.hpp>

#include "collectives/torch/tensors.h"
#include "collectives/torch/torch_work.h"
#include "transport/cpus.h"
#include "transport/job_token.h"
#include "transport/store_server.h"
#include "transport/transport.h"

namespace ringgrad::torch_backend {
namespace {

using c10d::OpType;

// Where peers reach rank 0: MASTER_ADDR (torchrun and env:// set it), else this host's name.
std::string this_host() {
  if (const char* addr = std::getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') return addr;
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "127.0.0.1";
  return name;
}

// A job id no other group shares: the store server refuses clients of another job.
std::string fresh_job_id() {
  std::random_device random;
  return fmt::format("torch-{:08x}{:08x}", random(), random());
}

// Rank 0's "host port job token" under this key of torch's (per-group) store.
constexpr const char* kStoreKey = "ringgrad/store";

}  // namespace

ProcessGroupRinggrad::ProcessGroupRinggrad(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                           std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size), store_(store) {
  transport::Config config;
  config.rank = rank;
  config.world_size = size;
  config.timeout = timeout;
  config.receive_poll = transport::receive_poll_default(size, static_cast<int>(transport::allowed_cpus().size()));
  std::unique_ptr<transport::StoreServer> server;
  if (rank == 0) {
    config.job_id = fresh_job_id();
    config.job_token = transport::new_job_token();  // torch's store carries it to the other ranks
    config.master_addr = this_host();
    config.master_port = 0;  // a free port, no race for it
    server = std::make_unique<transport::StoreServer>(config);
    config.master_port = server->port();
    const std::string where =
        fmt::format("{} {} {} {}", config.master_addr, config.master_port, config.job_id, config.job_token);
    store->set(kStoreKey, std::vector<uint8_t>(where.begin(), where.end()));
  } else {
    const std::vector<uint8_t> bytes = store->get(kStoreKey);
    std::istringstream where(std::string(bytes.begin(), bytes.end()));
    where >> config.master_addr >> config.master_port >> config.job_id >> config.job_token;
  }
  comm_ = std::make_unique<collectives::Communicator>(std::make_unique<transport::Transport>(config, std::move(server)));
  init();
}

ProcessGroupRinggrad::~ProcessGroupRinggrad() {
  // Python may drop the last reference holding the GIL, while a Future's callback on one of the
  // FutureThreads waits for it: the GIL is let go while the calls end and those threads join.
  PyThreadState* python = Py_IsInitialized() && PyGILState_Check() ? PyEval_SaveThread() : nullptr;
  comm_.reset();            // runs the queued calls to their end
  future_threads_.reset();  // completes their Futures, joins
  if (python != nullptr) PyEval_RestoreThread(python);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::run(OpType type, const std::vector<at::Tensor>& inputs,
                                                         std::vector<at::Tensor> outputs, std::vector<at::Tensor> buffers,
                                                         std::function<void()> finish,
                                                         const std::function<collectives::Work()>& issue) {
  auto work = c10::make_intrusive<TorchWork>(rank_, type, inputs, std::move(outputs), std::move(buffers),
                                             std::move(finish), *future_threads_);
  work->start(issue());
  if (sequenceNum_ && !c10d::isP2POp(type)) sequenceNum_->increment();
  return work;
}

// --- Point to point ------------------------------------------------------------------------------

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  const CallName what{"send", rank_, size_};
  const Staged t = stage(what, only(what, tensors));
  const uint64_t wire_tag = static_cast<uint32_t>(tag);
  if (coalescing_) {
    batch_.push_back(collectives::P2POp::send(moved(t.data), dst));
    batch_tags_.push_back(wire_tag);
    return batch_works_.emplace_back(
        c10::make_intrusive<TorchWork>(rank_, OpType::SEND, std::vector{t.user}, std::vector{t.user},
                                       std::vector{t.data}, nullptr, *future_threads_));
  }
  return run(OpType::SEND, {t.user}, {t.user}, {t.data}, nullptr,
             [&] { return comm_->send_async(moved(t.data), dst, wire_tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  const CallName what{"recv", rank_, size_};
  const Staged t = stage(what, only(what, tensors));
  const uint64_t wire_tag = static_cast<uint32_t>(tag);
  if (coalescing_) {
    batch_.push_back(collectives::P2POp::recv(moved(t.data), src));
    batch_tags_.push_back(wire_tag);
    return batch_works_.emplace_back(
        c10::make_intrusive<TorchWork>(rank_, OpType::RECV, std::vector{t.user}, std::vector{t.user},
                                       std::vector{t.data}, [t] { t.copy_back(); }, *future_threads_));
  }
  return run(OpType::RECV, {t.user}, {t.user}, {t.data}, [t] { t.copy_back(); },
             [&] { return comm_->recv_async(moved(t.data), src, wire_tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "ringgrad ", CallName{"recv", rank_, size_},
              ": receiving from any source is not supported; name the source rank");
}

void ProcessGroupRinggrad::startCoalescing() { coalescing_ = true; }

// One ringgrad batch per tag (a batch matches its peers' by one tag), in increasing tag order on
// every rank: batch t waits only on the peers' batches of tag t, which every rank reaches after
// finishing those of smaller tags, so the batches cannot wait on one another in a cycle.
void ProcessGroupRinggrad::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) {
  coalescing_ = false;
  std::map<uint64_t, std::vector<std::size_t>> by_tag;  // op indices of each tag, in issue order
  for (std::size_t i = 0; i < batch_.size(); ++i) by_tag[batch_tags_[i]].push_back(i);
  for (const auto& [tag, indices] : by_tag) {
    std::vector<collectives::P2POp> ops;
    for (std::size_t i : indices) ops.push_back(batch_[i]);
    const collectives::Work batch = comm_->batch_isend_irecv(std::move(ops), tag);
    for (std::size_t i : indices) batch_works_[i]->start(batch);
  }
  batch_.clear();
  batch_tags_.clear();
  batch_works_.clear();
}

void ProcessGroupRinggrad::setSequenceNumberForGroup() {
  constexpr int kBytes = sizeof(uint64_t);
  if (rank_ == 0) {
    const uint64_t start = 1 + std::random_device{}();
    sequenceNum_ = c10d::SequenceNum(start);
    store_->set(c10d::kSeqNumStoreKey, c10d::toVec<uint8_t>(start, kBytes));
  } else {
    sequenceNum_ = c10d::SequenceNum(c10d::fromVec<uint8_t>(store_->get(c10d::kSeqNumStoreKey)));
  }
}

uint64_t ProcessGroupRinggrad::getSequenceNumberForGroup() { return sequenceNum_ ? sequenceNum_->get() : 0; }

c10::intrusive_ptr<c10d::Work> ProcessGroupRinggrad::barrier(const c10d::BarrierOptions&) {
  return run(OpType::BARRIER, {}, {}, {}, nullptr, [&] { return comm_->barrier_async(); });
}

}  // namespace ringgrad::torch_backend
