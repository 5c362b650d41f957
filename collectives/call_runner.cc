// CallRunner: one call, from the argument check to the bytes.
#include "collectives/call_runner.h"

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/piggyback.h"
#include "collectives/backends/device_backend.h"
#include "collectives/backends/mpi_backend.h"
#include "collectives/collective_error.h"
#include "collectives/host_staging.h"
#include "transport/tag_names.h"

namespace ringgrad::collectives {
namespace {

// send/recv tags live in their own space (bit 63), apart from collectives' sequence numbers
// and the check's kCheckTag (bit 62).
constexpr uint64_t kP2PTagBit = uint64_t{1} << 63;

// What this layer's tags mean, for transport errors (transport/tag_names.h).
std::string describe_tag(uint64_t tag) {
  if ((tag & kP2PTagBit) != 0) return fmt::format("send/recv tag {}", tag & ~kP2PTagBit);
  if ((tag & kCheckTag) != 0) return "the argument check's exchange";
  return fmt::format("the data of collective #{}", tag);
}

// A transport error names its rank first ("rank 0: ..." or "ringgrad transport: rank 0: ..."),
// for when it is raised outside a collective. Wrapped in where(task), which names the rank
// already, it drops that prefix so the message names the rank once.
std::string without_rank(std::string_view what, int rank) {
  constexpr std::string_view kLayer = "ringgrad transport: ";
  const std::string_view layer = what.starts_with(kLayer) ? kLayer : std::string_view{};
  const std::string prefix = fmt::format("rank {}: ", rank);
  if (!what.substr(layer.size()).starts_with(prefix)) return std::string(what);
  return fmt::format("{}{}", layer, what.substr(layer.size() + prefix.size()));
}

}  // namespace

CallRunner::CallRunner(std::shared_ptr<transport::Transport> transport, const CommOptions& options,
                       const Group& group, const HostLayout& hosts, std::unique_ptr<MpiBackend> mpi)
    : transport_(std::move(transport)),
      options_(options),
      group_(group),
      hosts_(hosts),
      links_(std::make_unique<HostLinks>(*transport_, options_, group_, hosts_, callers_waiting_.get())),
      mpi_(std::move(mpi)) {
  transport::set_tag_describer(describe_tag);  // transport errors say what a message was
}

CallRunner::~CallRunner() = default;

std::string CallRunner::host_path() const { return links_->path(); }

// The call, start to end, in three stages: the argument check, the device staging of a group's
// call, the data. Throws what it fails with.
void CallRunner::run_call(Task& task) {
  const auto refuse_unless_agreed = [&](const std::string& why) {
    if (!why.empty()) throw CollectiveError(fmt::format("{}: {}", where(task, group_), why));
  };
  // 1. The argument check (check.h), which a reader learning the algorithms may skip.
  if (options_.check_args && is_collective(task.kind)) {
    // The check's messages travel like the data: shared memory once chosen (the first host
    // collective is checked over TCP, before the ranks meet to set shared memory up).
    const std::unique_ptr<Link> link = links_->link(task, kCheckTag);
    const std::size_t chunk = task.device == kHost ? options_.chunk_bytes : options_.device_chunk_bytes;
    const Descriptor mine = describe_call(task.kind, task.seq, task.args, task.algo, chunk, task.device != kHost,
                                          mpi_ != nullptr, task.invalid);
    const std::size_t block = task.args.count * task.elem_bytes;  // one rank's block (per peer, in all-to-all)
    if (piggybacks(mine.head, block)) {  // a small call: its data rides in the check's message
      refuse_unless_agreed(piggyback(*link, mine, task.args, block, heads_, bodies_));
      links_->choose_path();  // every rank passed the check, so all meet here (see 3.); later, at once
      return;
    }
    refuse_unless_agreed(agree(*link, mine, heads_));
    if (task.kind == CollKind::kAllToAllV) {  // per-peer counts: each pair compares its own
      const std::string counts = check_counts(*link, task.send_counts, task.recv_counts);
      refuse_unless_agreed(agree(*link, describe_call(task.kind, task.seq, task.args, task.algo, chunk,
                                                      task.device != kHost, mpi_ != nullptr, counts), heads_));
    }
  }
  // 2. A group's device buffers go through host memory (host_staging.h): the call becomes a host one.
  std::optional<HostStaging> staged;
  if (task.device != kHost && !group_.is_world()) staged.emplace(task, group_.rank, group_.size);
  // 3. The data, moved by the call's algorithm over its link, or by a backend. Every rank agreed
  // on this call, so all meet here: the first host collective chooses the path.
  const uint64_t tag = is_collective(task.kind) ? task.seq : kP2PTagBit | task.tag;
  if (task.device != kHost) {
    if (!device_) device_ = make_device_backend(*transport_, options_, task.device, hosts_);
    if (task.kind == CollKind::kBatchSendRecv) device_->run_batch(task.ops, tag);
    else device_->run(task.kind, task.algo, task.args, task.peer, tag);
  } else if (mpi_) {
    if (task.kind == CollKind::kBatchSendRecv) mpi_->run_batch(task.ops, task.tag);
    else if (task.kind == CollKind::kAllToAllV) mpi_->run_all_to_all_v(task.args, task.send_counts, task.recv_counts);
    else mpi_->run(task.kind, task.args, task.peer, task.tag);
  } else {
    if (is_collective(task.kind)) links_->choose_path();
    const std::unique_ptr<Link> link = links_->link(task, tag);
    if (task.kind == CollKind::kBatchSendRecv) irecv_isend_waitall(*link, task.ops);
    else if (task.kind == CollKind::kAllToAllV) pairwise_all_to_all_v(*link, task.args, task.send_counts, task.recv_counts);
    else run_collective(*link, task.kind, task.algo, task.args, task.peer, hosts_);
  }
  if (staged) staged->finish();
}

// A CollectiveError is found before any data moves: the communicator stays usable. Any other
// failure may leave the ranks out of step, so it breaks the communicator: every later call fails
// with the first error, and this rank runs no collective from the failed one on (for a send or
// recv, from the next collective).
CallRunner::Outcome CallRunner::execute(Task& task) noexcept {
  Outcome outcome;
  try {
    run_call(task);
    return {};
  } catch (const CollectiveError&) {
    return {std::current_exception(), {}};
  } catch (const transport::TransportError& e) {
    outcome.breaks = e.what();
    try {  // the error names the call; formatting it can fail only for want of memory
      outcome.error = std::make_exception_ptr(transport::TransportError(
          fmt::format("{}: {}", where(task, group_), without_rank(e.what(), group_.job_rank(group_.rank)))));
    } catch (...) {
      outcome.error = std::current_exception();
    }
  } catch (const std::exception& e) {
    outcome = {std::current_exception(), e.what()};
  } catch (...) {
    outcome.error = std::current_exception();
  }
  if (outcome.breaks.empty()) outcome.breaks = "an error without a message";
  if (!transport_) return outcome;  // broken already
  try {
    links_->abort(group_.rank, task.seq);  // peers waiting in those collectives wake and fail now
    // Abort: closing every connection makes the peers fail now instead of at their timeout (and
    // lets rank 0's transport leave without waiting for peers blocked on it).
    transport_->abort(outcome.breaks);
  } catch (...) {
    // Nothing more to tell the peers: they fail at their timeout instead.
  }
  transport_.reset();
  // Leaked on purpose: freeing device memory waits for the device, and our stream may wait
  // forever on an event of the dead peer. A broken communicator's process is about to end.
  static_cast<void>(device_.release());
  return outcome;
}

}  // namespace ringgrad::collectives
