// train_mlp: a multilayer perceptron on Fashion-MNIST, one process. The whole training loop
// is in main(): forward, loss, backward, optimizer step; evaluation after each epoch.
//
//   train_mlp --data /usr/share/datasets/fashion-mnist --epochs 3 --batch-size 64 --hidden 256
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <memory>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "nn/data/fashion_mnist.h"
#include "nn/data/idx.h"
#include "nn/data/loader.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn/safetensors.h"
#include "tensor/elementwise.h"
#include "tensor/random.h"
#include "tensor/reduce.h"
#include "tensor/threads.h"
#include "tensor/view.h"

using namespace ringgrad;
namespace data = ringgrad::nn::data;

namespace {

struct Options {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int epochs = 3;
  std::int64_t batch_size = 64;
  std::int64_t hidden = 256;
  std::string optimizer = "sgd";
  double lr = 0.01;
  double momentum = 0.9;
  std::uint64_t seed = 0;
  int log_every = 100;
  int threads = 1;
  std::string log_path;
  std::string out_path;
};

struct Evaluation {
  double accuracy = 0, loss = 0;
};

// Accuracy and mean loss over a whole split, in batches of 1000, without recording a graph.
Evaluation evaluate(nn::Module& model, const data::ImageDataset& ds) {
  NoGradGuard no_grad;
  model.eval();
  Evaluation e;
  const std::int64_t n = ds.size();
  for (std::int64_t start = 0; start < n; start += 1000) {
    const std::int64_t len = std::min<std::int64_t>(1000, n - start);
    const Tensor logits = model(kernels::narrow(ds.images, 0, start, len));
    const Tensor labels = kernels::narrow(ds.labels, 0, start, len);
    e.loss += cross_entropy(logits, labels).item<double>() * static_cast<double>(len);
    e.accuracy += kernels::sum(kernels::eq(kernels::argmax(logits, 1), labels)).item<double>();
  }
  model.train();
  return {e.accuracy / static_cast<double>(n), e.loss / static_cast<double>(n)};
}

int run(const Options& opt) {
  set_num_threads(opt.threads);
  const data::ImageDataset train = data::load_fashion_mnist(opt.data_dir, true);
  const data::ImageDataset test = data::load_fashion_mnist(opt.data_dir, false);

  manual_seed(opt.seed);
  const std::int64_t features = train.images.size(1);
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(features, opt.hidden), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(opt.hidden, 10)});
  std::unique_ptr<nn::Optimizer> optimizer;
  if (opt.optimizer == "sgd") {
    optimizer = std::make_unique<nn::SGD>(std::vector<nn::ParamGroup>{{model->parameters()}}, opt.lr, opt.momentum);
  } else {
    optimizer = std::make_unique<nn::Adam>(std::vector<nn::ParamGroup>{{model->parameters()}}, nn::AdamOptions{opt.lr});
  }

  std::ofstream log;
  if (!opt.log_path.empty()) log.open(opt.log_path);
  std::int64_t n_params = 0;
  for (const Tensor& p : model->parameters()) n_params += p.numel();
  fmt::print("MLP {}-{}-10, {} parameters, {} lr {}, batch {}, {} training samples\n", features, opt.hidden,
             n_params, opt.optimizer, opt.lr, opt.batch_size, train.size());

  std::int64_t step = 0;
  for (int epoch = 0; epoch < opt.epochs; ++epoch) {
    const auto batches = data::make_batches(data::epoch_order(train.size(), true, opt.seed, epoch), opt.batch_size);
    auto window_start = std::chrono::steady_clock::now();
    std::int64_t window_samples = 0;
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const Tensor x = data::take_rows(train.images, batches[b]);
      const Tensor y = data::take_rows(train.labels, batches[b]);

      const Tensor loss = cross_entropy((*model)(x), y);
      optimizer->zero_grad();
      backward(loss);
      optimizer->step();

      ++step;
      window_samples += x.size(0);
      if (step % opt.log_every == 0 || b + 1 == batches.size()) {
        const auto now = std::chrono::steady_clock::now();
        const double seconds = std::chrono::duration<double>(now - window_start).count();
        const double samples_per_s = static_cast<double>(window_samples) / seconds;
        const double loss_value = loss.item<double>();
        fmt::print("epoch {} step {:>5} ({:>4}/{}) loss {:.4f} {:>8.0f} samples/s\n", epoch + 1, step, b + 1,
                   batches.size(), loss_value, samples_per_s);
        if (log) {
          log << nlohmann::json{{"step", step}, {"epoch", epoch + 1}, {"train_loss", loss_value},
                                {"samples_per_s", samples_per_s}}
              << "\n";
        }
        window_start = std::chrono::steady_clock::now();
        window_samples = 0;
      }
    }
    const Evaluation e = evaluate(*model, test);
    fmt::print("epoch {} test accuracy {:.4f} test loss {:.4f}\n", epoch + 1, e.accuracy, e.loss);
    if (log) log << nlohmann::json{{"epoch", epoch + 1}, {"test_accuracy", e.accuracy}, {"test_loss", e.loss}} << "\n";
  }
  if (!opt.out_path.empty()) {
    nn::save_safetensors(opt.out_path, model->state_dict());
    fmt::print("saved {}\n", opt.out_path);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  CLI::App app{"Train a multilayer perceptron on Fashion-MNIST"};
  app.add_option("--data", opt.data_dir, "Folder with the Fashion-MNIST .gz files");
  app.add_option("--epochs", opt.epochs, "Passes over the training set")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", opt.batch_size, "Samples per step")->check(CLI::PositiveNumber);
  app.add_option("--hidden", opt.hidden, "Width of the hidden layer")->check(CLI::PositiveNumber);
  app.add_option("--optimizer", opt.optimizer, "sgd (with momentum) or adam")->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--lr", opt.lr, "Learning rate");
  app.add_option("--momentum", opt.momentum, "SGD momentum");
  app.add_option("--seed", opt.seed, "Seed of the initial weights and the shuffling");
  app.add_option("--log-every", opt.log_every, "Steps between progress lines")->check(CLI::PositiveNumber);
  app.add_option("--threads", opt.threads, "BLAS threads")->check(CLI::PositiveNumber);
  app.add_option("--log", opt.log_path, "Write JSON lines here");
  app.add_option("--out", opt.out_path, "Save the trained weights (.safetensors) here");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(opt);
  } catch (const data::DataError& e) {
    fmt::print(stderr, "train_mlp: {}\n", e.what());
    return 2;
  }
}
