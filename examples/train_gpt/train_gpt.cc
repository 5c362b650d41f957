// train_gpt: a character-level GPT on a text file, on one process or many. The loop in train()
// is the whole recipe: evaluate every eval_interval iterations, then one step of forward, loss,
// backward (gradients reduced across ranks by the chosen strategy), clipping and AdamW under a
// warmup + cosine learning rate.
//
//   train_gpt --data data/tinyshakespeare.txt --config baby --log run.jsonl --out ckpt.safetensors
//   train_gpt ... --resume ckpt.safetensors --max_iters 3000     # continue exactly where it stopped
//   ringgrad-run --nproc-per-node 2 train_gpt --config baby --strategy ddp
//   train_gpt --config baby --time_budget 60    # as good as it gets in 60 s of training
//   train_gpt --config shakespeare-char --device cuda --dtype bf16   # nanoGPT's GPU recipe
//   ringgrad-run --nproc-per-node 4 train_gpt --config baby --tp 2 --pp 2 --micro_batches 2   # grid_layout.cc
//   ringgrad-run --nproc-per-node 2 train_gpt --config baby --cp 2   # the sequence split, ring attention
//
// The loop is the same for every layout of the ranks: one process, any data-parallel strategy,
// any --tp x --pp x --cp grid; what differs (how the model is built and split, how a step's
// forward and backward run, the loss and logits of evaluation and sampling, checkpoints) is
// behind layout.h. The pieces around the loop sit beside this file: options (the flags),
// optimizer, checkpointing (resume and save), evaluation (loss estimates and the sample), report
// (progress, throughput, memory), and the layouts (data_parallel_layout, grid_layout).
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

#include "autograd/ops.h"
#include "collectives/collective_error.h"
#include "examples/train_gpt/checkpointing.h"
#include "examples/train_gpt/evaluation.h"
#include "examples/train_gpt/layout.h"
#include "examples/train_gpt/optimizer.h"
#include "examples/train_gpt/options.h"
#include "examples/train_gpt/report.h"
#include "examples/train_gpt/run.h"
#include "nn/data/char_dataset.h"
#include "nn/data/idx.h"
#include "nn/parallel/data_parallel/accelerator.h"
#include "nn/parallel/timeline.h"
#include "tensor/precision.h"
#include "tensor/threads.h"
#include "tensor/view.h"
#include "trace/trace.h"

using namespace ringgrad;
using namespace ringgrad::examples;
using nn::data::Split;
namespace parallel = ringgrad::nn::parallel;

namespace {

// The learning rate of iteration `it` (warmup, then cosine or wsd decay). With a time budget the
// schedule runs on the elapsed fraction of it instead, mapped onto lr_decay_iters.
double learning_rate(const nn::TrainConfig& cfg, std::int64_t it, double elapsed, double time_budget) {
  if (time_budget == 0) return cfg.lr_at(it);
  return cfg.lr_at(static_cast<std::int64_t>(elapsed / time_budget * static_cast<double>(cfg.lr_decay_iters)));
}

int train(nn::TrainConfig cfg, const Options& opt) {
  parallel::Accelerator acc(opt.placement.backend);
  const Device device = parallel::select_device(opt.placement.device);
  set_matmul_precision(parse_matmul_precision(opt.placement.dtype));
  const auto ds = nn::data::CharDataset::from_file(opt.paths.data);
  cfg.model.vocab_size = ds.vocab_size();
  const auto layout = make_layout(acc, cfg, opt, ds, device);  // the model on the ranks (layout.h)
  nn::parallel::DataParallel& dp = layout->dp();  // this rank's piece inside the --strategy
  const std::string resume = resume_path(opt.paths);
  nn::TrainState state = start_or_resume(acc, *layout, cfg, ds, opt, resume);
  Run run{acc, cfg, opt, ds, *layout, dp, device, state.iter, std::move(state),
          RunLog(opt.paths.log, acc.is_main_process(), !resume.empty())};
  print_run_header(run);

  const double time_budget = opt.dist.time_budget;  // seconds of training steps; 0: max_iters decides
  StepTimes times;
  parallel::TraceWindow timeline(opt.paths.trace, acc.comm(), &dp.module(), layout->traced(), 2, opt.paths.trace_iters);
  std::int64_t it = run.state.iter;
  for (;; ++it) {
    // Under a time budget training stops when it is spent; rank 0's clock decides for all.
    const double elapsed = time_budget > 0 ? acc.broadcast_from_main(times.seconds) : 0;
    if (time_budget > 0 ? elapsed >= time_budget : it >= cfg.max_iters) break;
    if (time_budget == 0 && it % cfg.eval_interval == 0) evaluate(run, it);

    timeline.at(it);
    const trace::Span iteration("iteration", "step");
    times.begin(dp);
    const double lr = learning_rate(cfg, it, elapsed, time_budget);
    const nn::data::Batch batch = ds.get_batch(Split::Train, cfg.batch_size, cfg.model.block_size, run.state.data_gen);
    dp.zero_grad();
    const double loss_sum = layout->forward_backward(batch);
    dp.set_lr(lr);
    const double grad_norm = optimizer_step(dp, cfg.grad_clip);
    const double ms = times.end(dp);

    if (opt.paths.save_every > 0 && (it + 1) % opt.paths.save_every == 0) save_checkpoint(run, it + 1);
    if (it % cfg.log_interval == 0) log_progress(run, it, loss_sum, lr, grad_norm, ms, times);
  }
  timeline.finish(it);
  report_throughput(run, times);
  report_memory(run);  // before evaluation, with this step's gradients held
  evaluate(run, it);
  if (!opt.paths.out.empty()) acc.print("saved {}\n", opt.paths.out);
  if (cfg.eval_full || time_budget > 0) report_full_val_loss(run, it);  // every validation token once
  return sample(run);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they happen, even in a log file
  nn::TrainConfig cfg;
  Options opt;
  if (const auto status = parse_options(argc, argv, cfg, opt)) return *status;
  try {
    set_num_threads(opt.threads);  // throws std::invalid_argument on a bad RINGGRAD_ONEDNN
    return train(cfg, opt);
  } catch (const nn::data::DataError& e) {
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const collectives::CollectiveError& e) {  // ranks that disagree (RINGGRAD_CHECK) would again after a restart
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // a batch that does not divide, a bad flag combination
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // an unreadable checkpoint, a GPU that is not there
    fmt::print(stderr, "train_gpt: {}\n", e.what());
    return 1;
  }
}
