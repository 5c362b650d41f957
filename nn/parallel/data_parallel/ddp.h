// Distributed data parallel with gradient buckets, after PyTorch DDP (Li et al., VLDB 2020).
// Every rank holds the whole model. Gradients live in a few large flat buckets, filled in reverse
// registration order (the order backward produces them). When a bucket's last gradient is
// accumulated, its all-reduce starts on the communicator's worker thread while backward goes
// on computing earlier layers: the communication of late layers hides behind the computation
// of early ones. Traffic: one all-reduce of all P gradient elements per step, bucket by bucket.
//
// When backward() returns (outside no_sync()), every rank's p.grad() is the average of the
// ranks' gradients, as in PyTorch; step() only clips and updates.
#pragma once

#include <vector>

#include "nn/parallel/data_parallel/data_parallel.h"

namespace ringgrad::nn::parallel {

class DistributedDataParallel : public DataParallel {
 public:
  /// Buckets hold up to `bucket_cap_mb` MiB of gradients; the first (the last layers) only
  /// `first_bucket_mb`, so communication starts early (PyTorch: 25 and 1). Without `overlap`
  /// every bucket waits for the end of backward (for measuring what overlap hides).
  DistributedDataParallel(std::shared_ptr<Module> model, collectives::Communicator& comm,
                          std::vector<ParamGroup> groups, const OptimizerFactory& make_optimizer,
                          double bucket_cap_mb = 25, bool overlap = true, double first_bucket_mb = 1);
  std::string name() const override { return "ddp"; }
  /// Backward, the buckets all-reduced as they fill; outside no_sync() it returns once every
  /// bucket is averaged. After no_sync() backwards, this averages what they accumulated too.
  void backward(const Tensor& loss) override;
  /// Every bucket all-reduced now, in order, nothing overlapped (what no_sync() backwards accumulated).
  void sync_gradients() override;
  /// Zeroes the buckets; each gradient stays a view into its bucket.
  void zero_grad() override;
  /// Parameter indices of each bucket, in launch order (for tests and printing).
  std::vector<std::vector<std::size_t>> bucket_members() const;

 private:
  struct Bucket {
    Tensor flat;                        // the gradients of `members`, back to back
    std::vector<std::size_t> members;   // indices into params_
    std::vector<Tensor> views;          // members' gradients: views into `flat`
    std::size_t pending = 0;            // gradients not yet accumulated in this backward
    collectives::Work work;
    double ready_us = 0;                // when its all-reduce started (for the timeline)
  };
  void on_gradient_ready(std::size_t param);
  void launch_ready_buckets();
  void finish_all_reduces();
  /// Bucket i's span on its own row of the timeline, from ready_us to `reduced_us` (trace/trace.h).
  void trace_bucket(std::size_t i, double reduced_us);

  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;     // param index -> bucket index
  std::vector<std::size_t> position_in_;   // param index -> position among its bucket's members
  std::size_t next_launch_ = 0;            // buckets start strictly in order, on every rank alike
  bool overlap_;
};

}  // namespace ringgrad::nn::parallel
