// Saving and resuming GPT training: the model and AdamW's moments under their names, and in the
// metadata the config, the iteration, the generators' states and the vocabulary as text; a load
// that misses a key says the file is not a ringgrad GPT checkpoint.
#include "nn/transformer/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <map>
#include <stdexcept>
#include <vector>

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
          {"rotary", c.rotary}, {"qk_norm", c.qk_norm}, {"relu_squared", c.relu_squared}, {"dtype", dtype_name(c.dtype)},
          {"num_experts", c.moe_experts}, {"moe_router_topk", c.moe_top_k},
          {"moe_expert_capacity_factor", c.moe_capacity_factor}, {"moe_aux_loss_coeff", c.moe_aux_loss_coef}};
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

// Metadata values are JSON strings: a raw quote or backslash needs escaping, and a byte past 0x7f
// alone is not UTF-8. Two hex digits per byte carry any byte.
constexpr const char* kVocabKey = "vocab_hex";

std::string hex(const std::string& bytes) {
  std::string text;
  for (unsigned char b : bytes) text += fmt::format("{:02x}", b);
  return text;
}

// A byte as a message shows it: 'a', '\n', '\x80'.
std::string shown(char c) {
  const auto b = static_cast<unsigned char>(c);
  if (c == '\n') return "'\\n'";
  if (c == '\t') return "'\\t'";
  if (c == '\'' || c == '\\') return fmt::format("'\\{}'", c);
  if (b >= 0x20 && b < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("'\\x{:02x}'", b);
}

// The bytes of `a` that `b` lacks, the first 8 shown.
std::string only_in(const std::string& a, const std::string& b) {
  std::vector<std::string> bytes;
  for (char c : a)
    if (b.find(c) == std::string::npos) bytes.push_back(shown(c));
  if (bytes.empty()) return "none";
  if (bytes.size() <= 8) return fmt::format("{}", fmt::join(bytes, " "));
  return fmt::format("{} and {} more", fmt::join(bytes.begin(), bytes.begin() + 8, " "), bytes.size() - 8);
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
  save_safetensors(path, tensors, checkpoint_metadata(model.config(), "", state, optimizer.steps()));
}

std::map<std::string, std::string> checkpoint_metadata(const GPTConfig& config, const std::string& vocab,
                                                       const TrainState& state, std::int64_t optimizer_steps) {
  return {{"format", kFormat},
          {"config", config_json(config).dump()},
          {kVocabKey, hex(vocab)},
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

std::string checkpoint_vocab(const std::map<std::string, std::string>& metadata, const std::string& path) {
  const auto it = metadata.find(kVocabKey);
  if (it == metadata.end()) return "";
  const std::string& text = it->second;
  if (text.size() % 2 != 0 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw std::runtime_error(fmt::format("{}: '{}' is not pairs of hex digits", path, kVocabKey));
  std::string vocab;
  for (std::size_t i = 0; i < text.size(); i += 2) vocab += static_cast<char>(std::stoi(text.substr(i, 2), nullptr, 16));
  return vocab;
}

void check_checkpoint_vocab(const std::string& path, const std::string& vocab) {
  const std::string saved = checkpoint_vocab(load_safetensors(path).metadata, path);
  // Checkpoints from before the vocabulary was recorded are checked by vocab_size alone: the
  // shapes of wte and lm_head must match when they load.
  if (saved.empty() || saved == vocab) return;
  throw std::invalid_argument(fmt::format(
      "{}: trained on another vocabulary ({} characters; this text has {}): only in the checkpoint's: {}; only in "
      "this text's: {}. Its ids would stand for other characters: resume on the text it was trained on",
      path, saved.size(), vocab.size(), only_in(saved, vocab), only_in(vocab, saved)));
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
  // Mixture of experts, under train_gpt's flag names; absent in dense checkpoints from before them.
  c.moe_experts = j.value("num_experts", std::int64_t{0}), c.moe_top_k = j.value("moe_router_topk", c.moe_top_k);
  c.moe_capacity_factor = j.value("moe_expert_capacity_factor", c.moe_capacity_factor);
  c.moe_aux_loss_coef = j.value("moe_aux_loss_coeff", c.moe_aux_loss_coef);
  // Checkpoints from before the parameters' dtype was recorded are float32.
  if (j.contains("dtype") && j.at("dtype") == dtype_name(DType::Float64)) c.dtype = DType::Float64;
  return c;
}

}  // namespace ringgrad::nn
