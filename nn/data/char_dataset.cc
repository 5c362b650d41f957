// The character-level data set: the byte vocabulary and its encode/decode, the 90/10 split, and
// get_batch drawing B random windows of T+1 tokens (targets are the inputs shifted by one).
#include "nn/data/char_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "nn/data/idx.h"

namespace ringgrad::nn::data {

CharTokenizer::CharTokenizer(const std::string& text) : ids_(256, -1) {
  std::vector<bool> seen(256, false);
  for (char ch : text) seen[static_cast<unsigned char>(ch)] = true;
  for (int b = 0; b < 256; ++b) {
    if (!seen[static_cast<std::size_t>(b)]) continue;
    ids_[static_cast<std::size_t>(b)] = static_cast<std::int64_t>(chars_.size());
    chars_.push_back(static_cast<char>(b));
  }
}

std::vector<std::int64_t> CharTokenizer::encode(const std::string& text) const {
  std::vector<std::int64_t> out;
  out.reserve(text.size());
  for (char ch : text) {
    const std::int64_t id = ids_[static_cast<unsigned char>(ch)];
    if (id < 0) throw std::invalid_argument(fmt::format("CharTokenizer: byte 0x{:02x} is not in the vocabulary", ch));
    out.push_back(id);
  }
  return out;
}

std::string CharTokenizer::decode(const std::vector<std::int64_t>& ids) const {
  std::string out;
  for (std::int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw std::out_of_range(fmt::format("CharTokenizer: id {} is outside the vocabulary of {}", id, vocab_size()));
    }
    out.push_back(chars_[static_cast<std::size_t>(id)]);
  }
  return out;
}

CharDataset CharDataset::from_file(const std::string& path) {
  require_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (text.empty()) throw DataError(path + ": the file is empty; expected a text corpus");
  if (text.find('\0') != std::string::npos) {
    throw DataError(fmt::format("{}: contains a NUL byte at offset {}; expected a text file, not binary data", path,
                                text.find('\0')));
  }
  return CharDataset(text);
}

CharDataset::CharDataset(const std::string& text)
    : tokenizer_(text), tokens_(tokenizer_.encode(text)), n_train_(static_cast<std::int64_t>(tokens_.size()) * 9 / 10) {}

std::int64_t CharDataset::size(Split split) const {
  return split == Split::Train ? n_train_ : static_cast<std::int64_t>(tokens_.size()) - n_train_;
}

Batch CharDataset::get_batch(Split split, std::int64_t batch_size, std::int64_t block_size, Generator& gen) const {
  const std::int64_t n = size(split);
  if (n < block_size + 2) {
    throw DataError(fmt::format("the {} split has {} tokens, too few for windows of block_size {} + 1",
                                split == Split::Train ? "training" : "validation", n, block_size));
  }
  const std::int64_t* base = tokens_.data() + (split == Split::Train ? 0 : n_train_);
  Batch batch{Tensor::zeros({batch_size, block_size}, DType::Int64), Tensor::zeros({batch_size, block_size}, DType::Int64)};
  for (std::int64_t b = 0; b < batch_size; ++b) {
    const auto start = static_cast<std::int64_t>(gen.next_below(static_cast<std::uint64_t>(n - block_size - 1)));
    std::copy_n(base + start, block_size, batch.x.data<std::int64_t>() + b * block_size);
    std::copy_n(base + start + 1, block_size, batch.y.data<std::int64_t>() + b * block_size);
  }
  return batch;
}

Batch CharDataset::windows(Split split, std::int64_t block_size, std::int64_t first, std::int64_t count) const {
  const std::int64_t predictions = size(split) - 1, n = window_count(split, block_size);
  const auto length = [&](std::int64_t w) { return std::min(block_size, predictions - w * block_size); };
  if (first < 0 || count < 1 || first + count > n || length(first) != length(first + count - 1))
    throw std::out_of_range(fmt::format("windows {} to {} of {} (of length {}, the last {})", first, first + count - 1, n,
                                        block_size, length(n - 1)));
  const std::int64_t t = length(first);
  const std::int64_t* base = tokens_.data() + (split == Split::Train ? 0 : n_train_);
  Batch batch{Tensor::zeros({count, t}, DType::Int64), Tensor::zeros({count, t}, DType::Int64)};
  for (std::int64_t w = 0; w < count; ++w) {
    const std::int64_t start = (first + w) * block_size;
    std::copy_n(base + start, t, batch.x.data<std::int64_t>() + w * t);
    std::copy_n(base + start + 1, t, batch.y.data<std::int64_t>() + w * t);
  }
  return batch;
}

}  // namespace ringgrad::nn::data
