// The grid layout of train_gpt (--tp, --pp, --cp): the world as dp x pp x cp x tp, this rank's
// stage of the GPT (one process's weights, drawn from the same seed, cut as nn/parallel/grid
// cuts them) inside the --strategy over its dp group. A step is grid_step: replica d's rows,
// cp rank k's positions, the pipeline's micro-batches (--micro_batches x --accumulation of them:
// accumulation is what a pipeline's micro-batches already do), the gradients averaged over cp
// and dp (with --num_experts, each stage's load-balancing losses added into its own backward;
// the experts whole on every rank, or with --ep sharded over groups of ep consecutive dp ranks,
// grid_expert_data_parallel). Evaluation is one forward of the pipeline with TP's
// vocabulary-parallel loss on the last stage (grid_loss); sampling draws from the last stage's
// logits, gathered over tp and cp, on the last stage's first rank, and every rank takes the
// token it drew. Checkpoints are the one-process format (grid_checkpoint.h). With --device
// cuda the stage, its optimizer state and each batch live on the rank's GPU; the groups'
// exchanges stage device buffers through host memory (collectives/host_staging.h).
#include <fmt/format.h>

#include "examples/train_gpt/layout.h"
#include "examples/train_gpt/optimizer.h"
#include "nn/parallel/grid/grid_checkpoint.h"
#include "nn/parallel/grid/grid_inference.h"
#include "nn/parallel/grid/grid_training.h"
#include "nn/transformer/train_step.h"
#include "tensor/random.h"
#include "tensor/view.h"

namespace ringgrad::examples {
namespace {

using namespace nn::parallel;

class GridLayout final : public Layout {
 public:
  GridLayout(Accelerator& acc, const nn::TrainConfig& cfg, const Options& opt, const nn::data::CharDataset& ds,
             Device device)
      : world_(acc.comm()), cfg_(cfg), vocab_(ds.tokenizer().chars()), device_(device),
        groups_(GridGroups::make(world_, world_.world_size() / (opt.mp.tp * opt.mp.pp * opt.mp.cp), opt.mp.pp,
                                 opt.mp.tp, opt.mp.cp)),
        micro_batches_(opt.mp.micro_batches * static_cast<int>(opt.dist.accumulation)),
        schedule_(parse_pipeline_schedule(opt.mp.schedule)),
        schedule_name_(opt.mp.virtual_stages > 1 ? fmt::format("{}, {} virtual stages", opt.mp.schedule,
                                                               opt.mp.virtual_stages)
                                                 : opt.mp.schedule) {
    const std::int64_t replicas = groups_.dp->world_size();
    if (cfg.batch_size % (replicas * micro_batches_) != 0)
      throw std::invalid_argument(fmt::format(
          "rank {}: global batch {} does not divide into {} data-parallel replica{} x {} micro-batches (--micro_batches "
          "{} x --accumulation {})", world_.rank(), cfg.batch_size, replicas, replicas == 1 ? "" : "s",
          micro_batches_, opt.mp.micro_batches, opt.dist.accumulation));
    manual_seed(cfg.seed);  // the weights one process would draw; each rank keeps its piece
    const nn::GPT whole(cfg.model);
    for (const Tensor& p : whole.parameters()) parameters_ += p.numel();
    stage_ = make_stage(whole, groups_, opt.mp.sp, opt.mp.virtual_stages);
    stage_->to(device);  // before the optimizer is made, so its state is made there too
    DataParallelOptions options;
    options.bucket_cap_mb = opt.dist.bucket_cap_mb;
    options.overlap = opt.dist.overlap;
    // Muon's matrices gathered over tp when the stage holds slices of them.
    const OptimizerFactory make_optimizer = optimizer_factory(cfg, opt.dist, *groups_.dp, stage_.get(), groups_.tp.get());
    if (opt.dist.ep > 1)  // the optimizer's groups once the stage keeps only its ep rank's experts
      dp_ = grid_expert_data_parallel(stage_, groups_, opt.dist.ep, [&] { return optimizer_groups(cfg, *stage_); },
                                      make_optimizer);
    else
      dp_ = grid_data_parallel(opt.dist.strategy, stage_, groups_, optimizer_groups(cfg, *stage_), make_optimizer, options);
  }

  DataParallel& dp() override { return *dp_; }

  std::string describe() const override {
    const std::int64_t replicas = groups_.dp->world_size();
    const std::string grid = groups_.grid.describe();  // its shape, then a line per rank
    return fmt::format("{} over the dp groups of a grid of {}: global batch {} = {} replica{} x {} rows, in {} "
                       "micro-batch{}{}", dp_->name(), grid.substr(0, grid.find('\n')), cfg_.batch_size, replicas,
                       replicas == 1 ? "" : "s", cfg_.batch_size / replicas, micro_batches_,
                       micro_batches_ == 1 ? "" : "es", stage_->stages() > 1 ? fmt::format(" ({})", schedule_name_) : "");
  }

  // Rank 0 prints what the first step (its forward, backward and optimizer step) asked of each
  // of its groups when the second begins.
  double forward_backward(const nn::data::Batch& batch) override {
    if (steps_ == 1 && world_.rank() == 0) print_step_communication();
    if (steps_++ == 0)
      for (auto* g : groups()) g->reset_stats();
    return grid_step(*dp_, groups_, batch.x.to(device_), batch.y.to(device_), micro_batches_, schedule_).loss;
  }

  double loss(const Tensor& x, const Tensor& y) override {
    return grid_loss(*stage_, groups_, x.to(device_), y.to(device_));
  }

  Tensor last_logits(const Tensor& ids) override {
    const Tensor logits = grid_logits(*stage_, groups_, ids.to(device_));  // [1, t, V] on the last stage
    const bool samples = stage_->is_last() && groups_.tp->rank() == 0 && groups_.cp->rank() == 0 && groups_.dp->rank() == 0;
    if (!samples) return Tensor();
    return kernels::to_dtype(kernels::narrow(logits, 1, ids.size(1) - 1, 1), DType::Float32).cpu();
  }

  void save(const std::string& path, const nn::TrainState& state) override {
    save_grid_checkpoint(path, *dp_, groups_, world_, cfg_.model, vocab_, state);
  }

  nn::TrainState load(const std::string& path) override { return load_grid_checkpoint(path, *dp_, groups_); }

  std::vector<const collectives::Communicator*> traced() override {
    return {&world_, groups_.tp.get(), groups_.cp.get(), groups_.pp.get(), groups_.dp.get()};
  }

  std::int64_t parameter_count() const override { return parameters_; }

 private:
  std::vector<collectives::Communicator*> groups() {
    return {groups_.tp.get(), groups_.cp.get(), groups_.pp.get(), groups_.dp.get()};
  }

  void print_step_communication() {
    constexpr const char* kNames[] = {"tp", "cp", "pp", "dp"};
    const auto group_of = groups();
    for (std::size_t i = 0; i < group_of.size(); ++i)
      if (group_of[i]->world_size() > 1) fmt::print("  one step's {}: {}\n", kNames[i], group_of[i]->stats().describe());
  }

  collectives::Communicator& world_;
  const nn::TrainConfig& cfg_;
  std::string vocab_;
  Device device_;
  GridGroups groups_;
  int micro_batches_;
  PipelineSchedule schedule_;
  std::string schedule_name_;
  std::int64_t parameters_ = 0, steps_ = 0;
  std::shared_ptr<PipelineStage> stage_;
  std::unique_ptr<DataParallel> dp_;
};

}  // namespace

std::unique_ptr<Layout> make_grid_layout(Accelerator& acc, const nn::TrainConfig& cfg, const Options& opt,
                                         const nn::data::CharDataset& ds, Device device) {
  return std::make_unique<GridLayout>(acc, cfg, opt, ds, device);
}

}  // namespace ringgrad::examples
