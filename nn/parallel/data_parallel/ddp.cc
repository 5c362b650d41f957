// DDP's buckets and their life in one backward: hooks count each bucket's gradients in, full
// buckets start their all-reduce in order, and backward ends by sending the rest and waiting.
#include "nn/parallel/data_parallel/ddp.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "nn/parallel/tensor_buffer.h"
#include "tensor/elementwise.h"
#include "tensor/view.h"
#include "trace/trace.h"

namespace ringgrad::nn::parallel {

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm,
                                                 std::vector<ParamGroup> groups,
                                                 const OptimizerFactory& make_optimizer, double bucket_cap_mb,
                                                 bool overlap, double first_bucket_mb)
    : DataParallel(std::move(model), comm, std::move(groups), make_optimizer),
      bucket_of_(params_.size()),
      position_in_(params_.size()),
      overlap_(overlap) {
  // Reverse registration order (the model's, not the optimizer groups': those put every bias
  // after every matrix) approximates the order backward produces gradients in.
  std::map<const Storage*, std::size_t> index;
  for (std::size_t i = 0; i < params_.size(); ++i) index.emplace(params_[i].storage().get(), i);
  std::vector<std::size_t> order;
  for (const Tensor& p : model_->parameters()) {
    const auto it = index.find(p.storage().get());
    if (it != index.end() && std::find(order.begin(), order.end(), it->second) == order.end()) order.push_back(it->second);
  }
  for (std::size_t i = 0; i < params_.size(); ++i)  // any the model does not list (none, normally) go last
    if (std::find(order.begin(), order.end(), i) == order.end()) order.insert(order.begin(), i);
  std::vector<std::vector<std::size_t>> members(1);
  double cap = std::min(first_bucket_mb, bucket_cap_mb) * (1 << 20), filled = 0;
  for (auto at = order.rbegin(); at != order.rend(); ++at) {
    const std::size_t i = *at;
    const double bytes = static_cast<double>(params_[i].numel() * static_cast<std::int64_t>(dtype_size(params_[i].dtype())));
    const bool dtype_changes = !members.back().empty() && params_[members.back().back()].dtype() != params_[i].dtype();
    if (!members.back().empty() && (filled + bytes > cap || dtype_changes)) {
      members.emplace_back();
      filled = 0;
      cap = bucket_cap_mb * (1 << 20);
    }
    members.back().push_back(i);
    filled += bytes;
  }
  for (auto& m : members) {
    if (m.empty()) continue;
    Bucket b;
    std::int64_t total = 0;
    for (std::size_t i : m) total += params_[i].numel();
    b.flat = Tensor::zeros({total}, params_[m.front()].dtype(), params_[m.front()].device());
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < m.size(); ++k) {
      const Tensor& p = params_[m[k]];
      b.views.push_back(kernels::view(kernels::narrow(b.flat, 0, offset, p.numel()), p.shape()));
      offset += p.numel();
      bucket_of_[m[k]] = buckets_.size();
      position_in_[m[k]] = k;
      params_[m[k]].set_grad(b.views.back());
    }
    b.members = m;
    b.pending = m.size();
    buckets_.push_back(std::move(b));
  }
  for (std::size_t i = 0; i < params_.size(); ++i) add_gradient_hook(i, [this, i](Tensor&) { on_gradient_ready(i); });
}

std::vector<std::vector<std::size_t>> DistributedDataParallel::bucket_members() const {
  std::vector<std::vector<std::size_t>> out;
  for (const auto& b : buckets_) out.push_back(b.members);
  return out;
}

void DistributedDataParallel::backward(const Tensor& loss) {
  if (sync_enabled_) {  // counted afresh each time: a backward that threw halfway leaves nothing behind
    for (auto& b : buckets_) b.pending = b.members.size();
    next_launch_ = 0;
  }
  DataParallel::backward(loss);  // the hooks count gradients in and start full buckets
  if (sync_enabled_) finish_all_reduces();
}

void DistributedDataParallel::sync_gradients() {
  next_launch_ = 0;
  finish_all_reduces();
}

void DistributedDataParallel::on_gradient_ready(std::size_t i) {
  Bucket& b = buckets_[bucket_of_[i]];
  const Tensor& view = b.views[position_in_[i]];
  Tensor& p = params_[i];
  if (p.grad().storage() != view.storage()) {
    // Someone reset the gradient (model.zero_grad() sets it to none): move it into the bucket.
    kernels::copy_(view, p.grad());
    p.set_grad(view);
  }
  if (!sync_enabled_) return;
  --b.pending;
  if (overlap_) launch_ready_buckets();
}

void DistributedDataParallel::launch_ready_buckets() {
  // Every bucket but the last, strictly in order: finish_all_reduces() sends the last one.
  while (next_launch_ + 1 < buckets_.size() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_++];
    if (comm_.world_size() == 1) continue;  // one rank: its gradient is already the average
    b.ready_us = trace::now_us();
    b.work = comm_.all_reduce_async(synced_buffer(b.flat), synced_buffer(b.flat), collectives::ReduceOp::AVG);
    stats_.bytes += static_cast<double>(b.flat.numel()) * static_cast<double>(dtype_size(b.flat.dtype()));
  }
}

void DistributedDataParallel::finish_all_reduces() {
  // 1. Parameters that took no part in this backward never fired their hook: their buckets go
  //    now (with whatever their gradients hold), in order, so no rank waits forever.
  for (auto& b : buckets_) b.pending = 0;
  launch_ready_buckets();
  // 2. The last bucket on the training thread. It fills only as backward ends, so there is no
  //    computation left to overlap it with: handing it to the worker would only add a hand-off
  //    while this thread waits anyway.
  Bucket& last = buckets_.back();
  if (comm_.world_size() > 1) {
    last.ready_us = trace::now_us();
    timed_wait([&] { comm_.all_reduce(synced_buffer(last.flat), synced_buffer(last.flat), collectives::ReduceOp::AVG); });
    stats_.bytes += static_cast<double>(last.flat.numel()) * static_cast<double>(dtype_size(last.flat.dtype()));
    if (trace::enabled()) trace_bucket(buckets_.size() - 1, trace::now_us());
  }
  // 3. Wait for the buckets still in flight; then every gradient is the average.
  timed_wait([&] {
    for (std::size_t i = 0; i + 1 < buckets_.size(); ++i) {
      Bucket& b = buckets_[i];
      b.work.wait();
      if (trace::enabled() && comm_.world_size() > 1) trace_bucket(i, b.work.completed_at() * 1e6);
      b.work = collectives::Work();
    }
  });
}

void DistributedDataParallel::trace_bucket(std::size_t i, double reduced_us) {
  // A row per bucket: buckets in flight overlap, and spans of one row must nest.
  const Bucket& b = buckets_[i];
  const double mb = static_cast<double>(b.flat.numel()) * static_cast<double>(dtype_size(b.flat.dtype())) / 1e6;
  trace::record(trace::intern(fmt::format("bucket {} ({:.2f} MB)", i, mb)), "ddp",
                trace::named_row(trace::intern(fmt::format("DDP bucket {}: ready -> reduced", i))), b.ready_us, reduced_us);
}

void DistributedDataParallel::zero_grad() {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Bucket& b = buckets_[bucket_of_[i]];
    params_[i].set_grad(b.views[position_in_[i]]);
  }
  for (auto& b : buckets_) kernels::fill_(b.flat, 0.0);
}

}  // namespace ringgrad::nn::parallel
