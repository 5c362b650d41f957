// The data-parallel layout of train_gpt: the whole GPT on every rank (one rank: one process),
// inside the --strategy (DDP's buckets, ZeRO's and FSDP's shards). Each step every rank takes
// its rows of the global batch, in --accumulation micro-steps whose gradients add up; all but
// the last run under no_sync(), so the gradients are reduced across ranks once per step.
// Evaluation runs the model on every rank (FSDP needs every rank in each forward); rank 0
// samples from a whole copy gathered to it. With --ep the experts are sharded over groups of
// ep ranks (nn/parallel/expert_parallel) and every forward, sampling's too, runs on every rank.
#include <fmt/format.h>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "examples/train_gpt/layout.h"
#include "examples/train_gpt/optimizer.h"
#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/expert_parallel/expert_parallel.h"
#include "nn/transformer/train_step.h"
#include "tensor/random.h"
#include "tensor/view.h"

namespace ringgrad::examples {
namespace {

class DataParallelLayout final : public Layout {
 public:
  DataParallelLayout(nn::parallel::Accelerator& acc, const nn::TrainConfig& cfg, const Options& opt,
                     const nn::data::CharDataset& ds, Device device)
      : acc_(acc), cfg_(cfg), vocab_(ds.tokenizer().chars()), device_(device),
        accumulation_(opt.dist.accumulation), local_batch_(acc.local_batch(cfg.batch_size, accumulation_)) {
    manual_seed(cfg.seed);  // the same initial weights on every device: drawn on the CPU, then moved
    model_ = std::make_shared<nn::GPT>(cfg.model);
    model_->to(device);  // before the optimizer is made, so its state is made there too
    dp_ = configure_optimizers(acc, model_, cfg, opt.dist);
    expert_parallel_ = opt.dist.ep > 1;
    ep_ = opt.dist.ep;
  }

  nn::parallel::DataParallel& dp() override { return *dp_; }

  std::string describe() const override {
    return fmt::format("{}: {}", dp_->name(), acc_.batch_split(cfg_.batch_size, accumulation_));
  }

  double forward_backward(const nn::data::Batch& batch) override {
    const std::int64_t micro = cfg_.batch_size / accumulation_;  // rows of one micro-step, all ranks
    double loss_sum = 0;
    for (std::int64_t m = 0; m < accumulation_; ++m) {
      const std::int64_t first_row = m * micro + acc_.rank() * local_batch_;
      const Tensor x = kernels::contiguous(kernels::narrow(batch.x, 0, first_row, local_batch_)).to(device_);
      const Tensor y = kernels::contiguous(kernels::narrow(batch.y, 0, first_row, local_batch_)).to(device_);
      const Tensor loss = nn::training_loss(*model_, dp_->forward(x), y) * (1.0 / static_cast<double>(accumulation_));
      loss_sum += loss.item<double>();
      if (m + 1 < accumulation_) {
        auto no_sync = dp_->no_sync();
        dp_->backward(loss);
      } else {
        dp_->backward(loss);
      }
    }
    return loss_sum;
  }

  double loss(const Tensor& x, const Tensor& y) override { return nn::batch_loss(*model_)(x, y); }

  // Sharded strategies hold only pieces of the model: the first call gathers a whole copy to
  // rank 0 (every rank sends its pieces), which alone runs it. With --ep every rank runs the
  // same ids through its experts (the dispatch is collective) and rank 0 keeps the logits.
  Tensor last_logits(const Tensor& ids) override {
    if (expert_parallel_) {
      NoGradGuard no_grad;
      model_->eval();
      const Tensor logits = (*model_)(ids.to(device_));
      model_->train();
      if (!acc_.is_main_process()) return Tensor();
      return kernels::to_dtype(kernels::narrow(logits, 1, ids.size(1) - 1, 1), DType::Float32).cpu();
    }
    if (!gathered_) {
      const nn::StateDict full = nn::parallel::full_state_dict(*dp_);
      gathered_ = true;
      if (acc_.is_main_process()) {
        nn::StateDict weights;
        for (const auto& [name, t] : full)
          if (!name.starts_with("optimizer.")) weights.emplace(name, t);
        sampler_ = std::make_unique<nn::GPT>(cfg_.model);
        sampler_->to(device_);
        sampler_->load_state_dict(weights);
        sampler_->eval();
      }
    }
    if (!sampler_) return Tensor();
    NoGradGuard no_grad;
    const Tensor logits = (*sampler_)(ids.to(device_));  // [1, t, V]
    return kernels::to_dtype(kernels::narrow(logits, 1, ids.size(1) - 1, 1), DType::Float32).cpu();
  }

  void save(const std::string& path, const nn::TrainState& state) override {
    acc_.save(*dp_, path, nn::checkpoint_metadata(cfg_.model, vocab_, state, dp_->optimizer().steps()));
  }

  nn::TrainState load(const std::string& path) override { return nn::checkpoint_state(acc_.load(*dp_, path), path); }

  std::vector<const collectives::Communicator*> traced() override { return {}; }

  std::int64_t parameter_count() const override {
    std::int64_t n = 0;
    for (const auto& [name, p] : model_->named_parameters())  // with --ep, each expert is on one rank of ep
      n += p.numel() * (expert_parallel_ && nn::parallel::is_expert_parameter(name) ? ep_ : 1);
    return n;
  }

 private:
  nn::parallel::Accelerator& acc_;
  const nn::TrainConfig& cfg_;
  std::string vocab_;
  Device device_;
  std::int64_t accumulation_, local_batch_;
  std::shared_ptr<nn::GPT> model_;
  std::unique_ptr<nn::parallel::DataParallel> dp_;
  bool expert_parallel_ = false;
  std::int64_t ep_ = 1;
  bool gathered_ = false;
  std::unique_ptr<nn::GPT> sampler_;  // rank 0's whole copy, once sampling begins
};

}  // namespace

std::unique_ptr<Layout> make_data_parallel_layout(nn::parallel::Accelerator& acc, const nn::TrainConfig& cfg,
                                                  const Options& opt, const nn::data::CharDataset& ds, Device device) {
  return std::make_unique<DataParallelLayout>(acc, cfg, opt, ds, device);
}

}  // namespace ringgrad::examples
