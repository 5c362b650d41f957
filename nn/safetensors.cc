// Writing and reading .safetensors files: the JSON header built and parsed with nlohmann::json,
// and every length and data offset checked against the file's size before a byte is copied.
#include "nn/safetensors.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "tensor/view.h"

namespace ringgrad::nn {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

std::string code_of(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
  }
  throw std::logic_error("safetensors: unknown dtype");
}

DType dtype_of_code(const std::string& code, const std::string& path) {
  if (code == "F32") return DType::Float32;
  if (code == "F64") return DType::Float64;
  if (code == "I64") return DType::Int64;
  throw std::runtime_error(fmt::format("{}: unsupported safetensors dtype '{}'", path, code));
}

}  // namespace

void save_safetensors(const std::string& path, const StateDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(t.numel()) * dtype_size(t.dtype());
    header[name] = {{"dtype", code_of(t.dtype())}, {"shape", t.shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // align the data to 8 bytes, as the reference writer does

  // Into a temporary file first: a crash mid-write must not cost the previous checkpoint.
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  if (out == nullptr) throw std::runtime_error("save_safetensors: cannot open " + tmp + " for writing (beside " + path + ")");
  auto put = [&](const void* data, std::size_t bytes) { return std::fwrite(data, 1, bytes, out) == bytes; };
  const std::uint64_t length = text.size();
  bool ok = put(&length, sizeof length) && put(text.data(), text.size());
  for (const auto& [name, t] : tensors) {
    if (!ok) break;
    const Tensor c = kernels::contiguous(t.cpu());  // raw_data() of a GPU tensor is a device pointer
    ok = put(c.raw_data(), static_cast<std::size_t>(c.numel()) * dtype_size(c.dtype()));
  }
  // On disk before the rename makes it the checkpoint.
  ok = ok && std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
  ok = std::fclose(out) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("save_safetensors: write to " + path + " failed: " + std::strerror(errno));
  }
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("load_safetensors: cannot open " + path);
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  std::uint64_t length = 0;
  if (file_size < sizeof length || !in.read(reinterpret_cast<char*>(&length), sizeof length)) {
    throw std::runtime_error(path + ": not a safetensors file (shorter than its 8-byte header length)");
  }
  if (length > file_size - sizeof length) {
    throw std::runtime_error(fmt::format("{}: header of {} bytes does not fit a {}-byte file", path, length, file_size));
  }
  std::string text(length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(length));
  nlohmann::json header = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) throw std::runtime_error(path + ": header is not a JSON object");

  const std::uint64_t data_start = sizeof length + length;
  const std::uint64_t data_size = file_size - data_start;
  SafetensorsFile result;
  try {
    for (auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        result.metadata = entry.get<std::map<std::string, std::string>>();
        continue;
      }
      const DType dtype = dtype_of_code(entry.at("dtype").get<std::string>(), path);
      const Shape shape = entry.at("shape").get<Shape>();
      const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
      const std::uint64_t bytes = static_cast<std::uint64_t>(numel(shape)) * dtype_size(dtype);
      if (offsets.size() != 2 || offsets[1] < offsets[0] || offsets[1] - offsets[0] != bytes || offsets[1] > data_size) {
        throw std::runtime_error(fmt::format("{}: tensor '{}' of shape {} has bad data offsets (file truncated?)",
                                             path, name, shape_str(shape)));
      }
      Tensor t = Tensor::zeros(shape, dtype);
      in.seekg(static_cast<std::streamoff>(data_start + offsets[0]));
      in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(bytes));
      if (!in) throw std::runtime_error(fmt::format("{}: could not read tensor '{}'", path, name));
      result.tensors.emplace(name, t);
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: malformed safetensors header: {}", path, e.what()));
  }
  return result;
}

}  // namespace ringgrad::nn
