// Character-level language-modelling data (Karpathy's char-rnn / nanoGPT shakespeare_char):
// one token per byte of a text file, the vocabulary being the sorted set of bytes that occur.
// The first 90% of the tokens are the training split, the last 10% validation; a batch is B
// random windows of T + 1 tokens, inputs the first T, targets the last T (shifted by one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace ringgrad::nn::data {

/// Maps bytes to ids 0..V-1 in byte order and back.
class CharTokenizer {
 public:
  /// The vocabulary of `text`: every distinct byte, sorted.
  explicit CharTokenizer(const std::string& text);
  std::int64_t vocab_size() const { return static_cast<std::int64_t>(chars_.size()); }
  /// The vocabulary itself: the byte of each id, in id order (a checkpoint records it).
  const std::string& chars() const { return chars_; }
  /// Throws std::invalid_argument for a byte outside the vocabulary.
  std::vector<std::int64_t> encode(const std::string& text) const;
  /// Throws std::out_of_range for an id outside [0, V).
  std::string decode(const std::vector<std::int64_t>& ids) const;

 private:
  std::string chars_;              // id -> byte
  std::vector<std::int64_t> ids_;  // byte -> id, -1 when absent
};

enum class Split { Train, Val };

/// Inputs and next-token targets, both int64 [B, T].
struct Batch {
  Tensor x, y;
};

class CharDataset {
 public:
  /// Reads and tokenises a UTF-8/ASCII text file. Throws DataError (nn/data/idx.h) naming the
  /// path when it is missing, unreadable, empty, or binary (contains a NUL byte).
  static CharDataset from_file(const std::string& path);
  /// The same from text already in memory (tests).
  explicit CharDataset(const std::string& text);

  const CharTokenizer& tokenizer() const { return tokenizer_; }
  std::int64_t vocab_size() const { return tokenizer_.vocab_size(); }
  /// Tokens in a split: the first 90% (Train) or the last 10% (Val).
  std::int64_t size(Split split) const;

  /// B windows of T + 1 tokens at offsets drawn uniformly from [0, size - T - 1) with `gen`
  /// (B draws). Throws DataError when the split has fewer than T + 2 tokens.
  Batch get_batch(Split split, std::int64_t batch_size, std::int64_t block_size, Generator& gen) const;
  /// Consecutive windows for evaluating on every token once: window w predicts tokens
  /// [w T + 1, w T + t] from [w T, w T + t), t = T (block_size) except the last window's, which
  /// is what is left (size - 1 predictions in all). `count` windows from `first`, all of one
  /// length: [count, t]. Throws std::out_of_range past the last window, or when the windows
  /// asked for differ in length (the last stands alone).
  Batch windows(Split split, std::int64_t block_size, std::int64_t first, std::int64_t count) const;
  /// How many windows windows() cuts the split into.
  std::int64_t window_count(Split split, std::int64_t block_size) const {
    return (size(split) - 1 + block_size - 1) / block_size;
  }

 private:
  CharTokenizer tokenizer_;
  std::vector<std::int64_t> tokens_;
  std::int64_t n_train_;
};

}  // namespace ringgrad::nn::data
