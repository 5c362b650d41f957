// Saving and resuming GPT training: the model and AdamW's moments under their names, and in the
// metadata the config, the iteration and the generators' states as text; a load that misses a key
// says the file is not a ringgrad GPT checkpoint.
#include "nn/transformer/checkpoint.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>

#include "nn/safetensors.h"

namespace ringgrad::nn {
namespace {

constexpr const char* kFormat = "ringgrad-gpt-1";

// The model's name of each optimizer parameter, found by the storage they share.
std::string name_of(const Tensor& p, const GPT& model) {
  for (const auto& [name, q] : model.named_parameters()) {
    if (q.storage() == p.storage()) return name;
  }
  throw std::invalid_argument("checkpoint: the optimizer holds a parameter that is not the model's");
}

nlohmann::json config_json(const GPTConfig& c) {
  return {{"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_embd", c.n_embd}, {"block_size", c.block_size},
          {"vocab_size", c.vocab_size}, {"dropout", c.dropout}, {"bias", c.bias}, {"tie_weights", c.tie_weights},
          {"rotary", c.rotary}, {"qk_norm", c.qk_norm}, {"relu_squared", c.relu_squared}, {"dtype", dtype_name(c.dtype)}};
}

std::string generator_text(const Generator& g) { return fmt::format("{} {}", g.seed(), g.offset()); }

Generator parse_generator(const std::string& text) {
  const std::size_t space = text.find(' ');
  Generator g(std::stoull(text.substr(0, space)));
  g.set_offset(std::stoull(text.substr(space + 1)));
  return g;
}

const std::string& meta(const std::map<std::string, std::string>& metadata, const std::string& key,
                        const std::string& path) {
  auto it = metadata.find(key);
  if (it == metadata.end()) throw std::runtime_error(fmt::format("{}: not a ringgrad GPT checkpoint (no '{}')", path, key));
  return it->second;
}

}  // namespace

void save_checkpoint(const std::string& path, const GPT& model, const AdamW& optimizer, const TrainState& state) {
  StateDict tensors = model.state_dict();
  const auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t i = 0; i < groups[g].params.size(); ++i) {
      if (!optimizer.exp_avg[g][i].defined()) continue;  // no step taken yet
      const std::string name = name_of(groups[g].params[i], model);
      tensors.emplace("optimizer.exp_avg." + name, optimizer.exp_avg[g][i]);
      tensors.emplace("optimizer.exp_avg_sq." + name, optimizer.exp_avg_sq[g][i]);
    }
  }
  save_safetensors(path, tensors, checkpoint_metadata(model.config(), state, optimizer.steps()));
}

std::map<std::string, std::string> checkpoint_metadata(const GPTConfig& config, const TrainState& state,
                                                       std::int64_t optimizer_steps) {
  return {{"format", kFormat},
          {"config", config_json(config).dump()},
          {"iter", std::to_string(state.iter)},
          {"optimizer.steps", std::to_string(optimizer_steps)},
          {"data_gen", generator_text(state.data_gen)},
          {"dropout_gen", generator_text(state.dropout_gen)}};
}

TrainState checkpoint_state(const std::map<std::string, std::string>& metadata, const std::string& path) {
  if (meta(metadata, "format", path) != kFormat) throw std::runtime_error(path + ": unknown checkpoint format");
  return {std::stoll(meta(metadata, "iter", path)), parse_generator(meta(metadata, "data_gen", path)),
          parse_generator(meta(metadata, "dropout_gen", path))};
}

TrainState load_checkpoint(const std::string& path, GPT& model, AdamW& optimizer) {
  SafetensorsFile file = load_safetensors(path);
  const TrainState state = checkpoint_state(file.metadata, path);
  StateDict weights, moments;
  for (auto& [name, t] : file.tensors) (name.starts_with("optimizer.") ? moments : weights).emplace(name, t);
  model.load_state_dict(weights);

  const auto& groups = optimizer.param_groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::size_t i = 0; i < groups[g].params.size(); ++i) {
      const std::string name = name_of(groups[g].params[i], model);
      auto m = moments.find("optimizer.exp_avg." + name), v = moments.find("optimizer.exp_avg_sq." + name);
      if (m == moments.end() || v == moments.end()) continue;
      // Fresh CPU tensors from the file, moved to where the parameter lives.
      const Device device = groups[g].params[i].device();
      optimizer.exp_avg[g][i] = m->second.to(device);
      optimizer.exp_avg_sq[g][i] = v->second.to(device);
    }
  }
  optimizer.set_steps(std::stoll(meta(file.metadata, "optimizer.steps", path)));
  return state;
}

GPTConfig checkpoint_config(const std::string& path) {
  const SafetensorsFile file = load_safetensors(path);
  const auto j = nlohmann::json::parse(meta(file.metadata, "config", path));
  GPTConfig c;
  c.n_layer = j.at("n_layer"), c.n_head = j.at("n_head"), c.n_embd = j.at("n_embd");
  c.block_size = j.at("block_size"), c.vocab_size = j.at("vocab_size"), c.dropout = j.at("dropout");
  c.bias = j.at("bias"), c.tie_weights = j.at("tie_weights");
  // Absent in checkpoints from before these options: off.
  c.rotary = j.value("rotary", false), c.qk_norm = j.value("qk_norm", false), c.relu_squared = j.value("relu_squared", false);
  // Checkpoints from before the parameters' dtype was recorded are float32.
  if (j.contains("dtype") && j.at("dtype") == dtype_name(DType::Float64)) c.dtype = DType::Float64;
  return c;
}

}  // namespace ringgrad::nn
