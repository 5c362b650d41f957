// Checkpoint writes are atomic: a process killed (SIGKILL) while it writes a 256 MiB file over
// an existing checkpoint leaves a file that loads whole, the old one or the new one, never a
// torn one; a finished write leaves no temporary behind; a write that cannot happen throws
// naming the path and leaves the old file as it was.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "nn/safetensors.h"

using namespace ringgrad;
using namespace ringgrad::nn;

namespace {

StateDict filled(double value, std::int64_t n) { return {{"w", Tensor::full({n}, value, DType::Float64)}}; }

double first_value(const std::string& path) { return load_safetensors(path).tensors.at("w").to_vector<double>().front(); }

bool temporaries_beside(const std::filesystem::path& path) {
  for (const auto& e : std::filesystem::directory_iterator(path.parent_path()))
    if (e.path().filename().string().starts_with(path.filename().string() + ".tmp.")) return true;
  return false;
}

}  // namespace

TEST_CASE("safetensors: a write killed midway leaves the previous checkpoint whole") {
  const auto dir = std::filesystem::temp_directory_path() / ("atomic_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "ckpt.safetensors").string();
  save_safetensors(path, filled(1.0, 1000));
  CHECK_FALSE(temporaries_beside(path));
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const StateDict big = filled(2.0, std::int64_t{32} << 20);  // 256 MiB
    char byte = 1;
    (void)!::write(ready[1], &byte, 1);
    save_safetensors(path, big);
    ::_exit(0);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // inside the write, on any machine here
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  const double v = first_value(path);  // loads: the header and every byte are there
  INFO("the checkpoint now holds " << v << (WIFSIGNALED(status) ? " (the writer was killed)" : " (the writer finished)"));
  CHECK((v == 1.0 || v == 2.0));
  if (WIFSIGNALED(status)) CHECK(v == 1.0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("safetensors: a write that cannot happen throws naming the path, and leaves the old file") {
  const auto dir = std::filesystem::temp_directory_path() / ("atomic_ro_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "ckpt.safetensors").string();
  save_safetensors(path, filled(1.0, 10));
  REQUIRE_THROWS_WITH(save_safetensors((dir / "missing" / "x.safetensors").string(), filled(2.0, 10)),
                      Catch::Contains("missing/x.safetensors"));
  CHECK(first_value(path) == 1.0);
  CHECK_FALSE(temporaries_beside(path));
  std::filesystem::remove_all(dir);
}
