// Gathering a grid's pieces into one GPT and AdamW on rank 0 (the strategy's full_state_dict over
// dp, the tp pieces joined, the stages sent to rank 0), and cutting a whole checkpoint into this
// rank's pieces (shard_of over tp, then the strategy's load_full_state_dict over dp).
#include "nn/parallel/grid/grid_checkpoint.h"

#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "nn/parallel/data_parallel/training_state.h"
#include "nn/parallel/model_parallel/tensor_parallel_gpt.h"
#include "nn/parallel/tensor_buffer.h"
#include "nn/safetensors.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Communicator;

// The whole tensor from the tp group's pieces of `mine` (spec: how it is cut), `rows` rows
// when the vocabulary was padded, in host memory (what rank 0 writes; the pieces may be on a GPU).
Tensor whole_of(const Tensor& mine, const ShardSpec& spec, Communicator& tp, std::int64_t rows) {
  const Tensor whole = gather_shards(mine, spec, tp).cpu();
  if (!spec.padded || whole.size(0) == rows) return whole;
  return kernels::clone(kernels::narrow(whole, 0, 0, rows));
}

// Which stage holds parameter `name` of the whole GPT (the first stage for a tied wte).
int owner(const std::string& name, const GPTConfig& c, int stages) {
  if (name.starts_with("h.")) return static_cast<int>(std::stoll(name.substr(2)) / (c.n_layer / stages));
  if (name.starts_with("wte.") || name.starts_with("wpe.")) return 0;
  return stages - 1;  // ln_f, lm_head
}

}  // namespace

void save_grid_checkpoint(const std::string& path, DataParallel& dp, GridGroups& groups,
                          collectives::Communicator& world, const GPTConfig& config, const std::string& vocab,
                          const TrainState& state) {
  auto& stage = dynamic_cast<PipelineStage&>(dp.module());
  // The stage's whole tensors on dp rank 0 (the strategy gathers its shards over the dp group).
  const StateDict replica = full_state_dict(dp);
  const std::int64_t steps = dp.optimizer().steps();
  // Every state name the optimizer has; each parameter has those of its group (Muon's momentum on
  // the blocks' matrices, AdamW's moments on the rest, under --optimizer muon).
  const std::vector<std::string> states = steps > 0 ? dp.optimizer().state_names() : std::vector<std::string>{};
  // Every tp group of replica 0 joins its pieces (the all-gathers are collectives of the group).
  std::map<std::string, std::vector<Tensor>> whole;  // name -> parameter, then the states it has
  std::map<std::string, std::int64_t> has;           // name -> bit i set when it has states[i]
  if (groups.dp->rank() == 0) {
    // The stage's parameters as the strategy gathered them: with expert parallelism every expert
    // of its layers, not only this rank's (the same names on every rank of the tp group).
    for (const auto& [name, tensor] : replica) {
      if (name.starts_with("optimizer.")) continue;
      if (name == "wte.weight" && stage.tied_copies() && stage.is_last()) continue;  // the first stage's copy is saved
      const ShardSpec spec = shard_spec(name);
      const std::int64_t rows = spec.padded ? config.vocab_size : 0;
      std::vector<Tensor>& out = whole[name];
      out.push_back(whole_of(tensor, spec, *groups.tp, rows));
      has[name] = 0;
      for (std::size_t i = 0; i < states.size(); ++i)
        if (const auto it = replica.find("optimizer." + states[i] + "." + name); it != replica.end()) {
          out.push_back(whole_of(it->second, spec, *groups.tp, rows));
          has[name] |= std::int64_t{1} << i;
        }
    }
  }
  // Replica 0 of each stage (dp 0, cp 0, tp 0) sends to pp rank 0 of its pipeline: rank 0; for
  // each parameter which states it has, then the tensors.
  const bool replica0 = groups.dp->rank() == 0 && groups.cp->rank() == 0 && groups.tp->rank() == 0;
  Communicator& pp = *groups.pp;
  const collectives::DType i64 = collectives::DType::kInt64;
  if (replica0) {
    // The whole model's names and shapes in the GPT's order: each stage sends its tensors in it,
    // and rank 0 takes each in it from the stage that holds it.
    const Generator saved = default_generator();
    GPT model(config);  // shapes and names only
    default_generator() = saved;
    if (pp.rank() != 0) {
      for (auto& [name, p] : model.named_parameters())
        if (whole.contains(name)) {
          pp.send(collectives::ConstBuffer(&has.at(name), 1, i64), 0);
          for (const Tensor& t : whole.at(name)) pp.send(synced_buffer(t), 0);
        }
    } else {
      StateDict file;
      for (auto& [name, p] : model.named_parameters()) {
        const int from = owner(name, config, pp.world_size());
        std::int64_t bits = 0;
        if (from == 0) bits = has.at(name);
        else pp.recv(collectives::Buffer(&bits, 1, i64), from);
        std::size_t k = 0;  // the next of this parameter's tensors
        for (std::size_t i = 0; i <= states.size(); ++i) {
          if (i > 0 && (bits >> (i - 1) & 1) == 0) continue;
          Tensor t = Tensor::empty(p.shape(), p.dtype());
          if (from == 0) kernels::copy_(t, whole.at(name)[k]);
          else pp.recv(synced_buffer(t), from);
          ++k;
          file.emplace(i == 0 ? name : "optimizer." + states[i - 1] + "." + name, t);
        }
      }
      file.emplace("optimizer.steps", Tensor::full({1}, static_cast<double>(steps), DType::Int64));
      std::map<std::string, std::string> meta = checkpoint_metadata(config, vocab, state, steps);
      meta.emplace("layout", groups.grid.describe().substr(0, groups.grid.describe().find('\n')));
      meta.emplace("world_size", std::to_string(world.world_size()));
      save_safetensors(path, file, meta);
    }
  }
  world.barrier();  // nobody reads the file before it is complete
}

TrainState load_grid_checkpoint(const std::string& path, DataParallel& dp, GridGroups& groups) {
  const SafetensorsFile file = load_safetensors(path);
  const TrainState state = checkpoint_state(file.metadata, path);
  auto get = [&](const std::string& name, const Shape& shape) -> const Tensor& {
    const auto it = file.tensors.find(name);
    if (it == file.tensors.end()) throw std::invalid_argument(fmt::format("{}: missing '{}'", path, name));
    if (it->second.shape() != shape)
      throw std::invalid_argument(fmt::format("{}: '{}' is {}, the model's is {}", path, name, shape_str(it->second.shape()),
                                              shape_str(shape)));
    return it->second;
  };
  auto& stage = dynamic_cast<PipelineStage&>(dp.module());
  const GPTConfig& c = stage.config();
  // This rank's piece of every tensor, under the stage's names, for the strategy to take its part of.
  StateDict piece;
  const Tensor& steps = get("optimizer.steps", {1});
  piece.emplace("optimizer.steps", steps);
  // Every state the file has for a parameter (the strategy takes those of its group).
  const std::vector<std::string> states =
      steps.item<std::int64_t>() > 0 ? dp.optimizer().state_names() : std::vector<std::string>{};
  const int tp = stage.is_split() ? groups.tp->world_size() : 1;
  for (auto& [name, p] : stage.named_parameters()) {
    const ShardSpec spec = stage.is_split() ? shard_spec(name) : ShardSpec{};
    // The whole tensor's shape: the piece's, times the group along the cut, less the padding.
    Shape whole = p.shape();
    if (spec.dim >= 0) whole[static_cast<std::size_t>(spec.dim)] *= tp;
    if (spec.padded) whole[0] = c.vocab_size;
    piece.emplace(name, shard_of(get(name, whole), spec, groups.tp->rank(), tp));
    for (const std::string& s : states)
      if (file.tensors.contains("optimizer." + s + "." + name))
        piece.emplace("optimizer." + s + "." + name,
                      shard_of(get("optimizer." + s + "." + name, whole), spec, groups.tp->rank(), tp));
  }
  load_full_state_dict(dp, piece);
  return state;
}

}  // namespace ringgrad::nn::parallel
