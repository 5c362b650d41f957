// Modules: parameter naming, state_dict round trips through .safetensors, load errors, forward
// hooks and the handles that remove them.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "nn/linear.h"
#include "nn/safetensors.h"
#include "tensor/random.h"

using namespace ringgrad;
using namespace ringgrad::nn;

static std::shared_ptr<Sequential> mlp() {
  return std::make_shared<Sequential>(std::vector<std::shared_ptr<Module>>{
      std::make_shared<Linear>(4, 3), std::make_shared<ReLU>(), std::make_shared<Linear>(3, 2)});
}

static std::string temp_path(const char* name) { return (std::filesystem::temp_directory_path() / name).string(); }

TEST_CASE("parameters carry dotted names in registration order") {
  auto model = mlp();
  NamedTensors named = model->named_parameters();
  REQUIRE(named.size() == 4);
  REQUIRE(named[0].first == "0.weight");
  REQUIRE(named[1].first == "0.bias");
  REQUIRE(named[3].first == "2.bias");
  REQUIRE(named[0].second.shape() == Shape{3, 4});
  REQUIRE(named[0].second.requires_grad());
}

TEST_CASE("Linear initialises within PyTorch's bound 1/sqrt(in)") {
  manual_seed(1);
  Linear layer(100, 50);
  for (float w : layer.weight.to_vector<float>()) REQUIRE(std::abs(w) <= 0.1f);
}

TEST_CASE("state_dict round-trips through .safetensors bit for bit") {
  manual_seed(1);
  auto a = mlp();
  manual_seed(2);
  auto b = mlp();
  const std::string path = temp_path("ringgrad_module_test.safetensors");
  save_safetensors(path, a->state_dict(), {{"format", "pt"}});
  SafetensorsFile file = load_safetensors(path);
  REQUIRE(file.metadata.at("format") == "pt");
  b->load_state_dict(file.tensors);
  for (auto& [name, t] : a->state_dict()) REQUIRE(t.to_vector<float>() == b->state_dict().at(name).to_vector<float>());

  // The header is the documented format: 8-byte length, then JSON naming every tensor.
  std::ifstream in(path, std::ios::binary);
  std::uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), 8);
  std::string header(length, ' ');
  in.read(header.data(), static_cast<std::streamsize>(length));
  REQUIRE(header.find("\"0.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("load_state_dict names what does not fit") {
  auto model = mlp();
  StateDict state = model->state_dict();
  state.erase("2.bias");
  REQUIRE_THROWS_WITH(model->load_state_dict(state), Catch::Contains("missing key '2.bias'"));
  state = model->state_dict();
  state["0.weight"] = Tensor::zeros({4, 3});
  REQUIRE_THROWS_WITH(model->load_state_dict(state), Catch::Contains("'0.weight'") && Catch::Contains("[4, 3]"));
  state = model->state_dict();
  state["extra"] = Tensor::zeros({1});
  REQUIRE_THROWS_WITH(model->load_state_dict(state), Catch::Contains("unexpected key 'extra'"));
}

TEST_CASE("a corrupt or truncated checkpoint is an error naming the file") {
  const std::string path = temp_path("ringgrad_corrupt.safetensors");
  save_safetensors(path, mlp()->state_dict());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 5);
  REQUIRE_THROWS_WITH(load_safetensors(path), Catch::Contains(path) && Catch::Contains("truncated"));
  {
    std::ofstream out(path, std::ios::binary);
    const std::uint64_t length = 1000;
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << "{}";
  }
  REQUIRE_THROWS_WITH(load_safetensors(path), Catch::Contains("does not fit"));
  std::filesystem::remove(path);
  REQUIRE_THROWS_WITH(load_safetensors(path), Catch::Contains("cannot open"));
}

TEST_CASE("forward hooks run around forward, and each handle removes only its own") {
  manual_seed(1);
  auto model = mlp();
  const Tensor x = Tensor::ones({1, 4});
  const std::vector<float> plain = (*model)(x).to_vector<float>();
  std::vector<std::string> log;
  auto pre = model->register_forward_pre_hook([&](Module&) { log.push_back("pre"); });
  auto doubled = model->register_forward_hook([&](Module&, const Tensor& y) {
    log.push_back("post");
    return y * 2.0;
  });
  const std::vector<float> hooked = (*model)(x).to_vector<float>();
  REQUIRE(log == std::vector<std::string>{"pre", "post"});
  for (std::size_t i = 0; i < plain.size(); ++i) REQUIRE(hooked[i] == 2 * plain[i]);
  doubled.remove();  // the output is the module's own again; the pre-hook stays
  REQUIRE((*model)(x).to_vector<float>() == plain);
  REQUIRE(log == std::vector<std::string>{"pre", "post", "pre"});
}
