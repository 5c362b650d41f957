// The character tokenizer, the train/val windows and the learning-rate schedule.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "nn/data/char_dataset.h"
#include "nn/data/idx.h"
#include "nn/lr_schedule.h"

using namespace ringgrad;
using namespace ringgrad::nn;
using data::CharDataset;
using data::Split;

TEST_CASE("CharTokenizer: sorted byte vocabulary, encode/decode round trip") {
  const data::CharTokenizer tok("hello world");
  CHECK(tok.vocab_size() == 8);  // ' ' d e h l o r w
  CHECK(tok.encode(" dehlorw") == std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(tok.decode(tok.encode("low herd")) == "low herd");
  CHECK_THROWS_AS(tok.encode("z"), std::invalid_argument);
  CHECK_THROWS_AS(tok.decode({8}), std::out_of_range);
}

TEST_CASE("CharDataset: 90/10 split, targets are inputs shifted by one, seeded windows") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text.push_back(static_cast<char>('a' + i % 26));
  const CharDataset ds(text);
  CHECK(ds.size(Split::Train) == 900);
  CHECK(ds.size(Split::Val) == 100);
  Generator g1(3), g2(3);
  const data::Batch b = ds.get_batch(Split::Val, 4, 8, g1);
  CHECK(b.x.shape() == Shape{4, 8});
  const auto x = b.x.to_vector<std::int64_t>(), y = b.y.to_vector<std::int64_t>();
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == (x[i] + 1) % 26);  // next letter
  CHECK(ds.get_batch(Split::Val, 4, 8, g2).x.to_vector<std::int64_t>() == x);
  // Validation windows come from the last 100 characters, which start at 'q' (900 % 26 = 16).
  const data::Batch all = ds.get_batch(Split::Val, 1, 98, g1);
  CHECK(all.x.to_vector<std::int64_t>()[0] == 16);
  CHECK_THROWS_AS(ds.get_batch(Split::Val, 1, 99, g1), data::DataError);
}

TEST_CASE("CharDataset::from_file: missing, empty and binary files are DataErrors") {
  CHECK_THROWS_AS(CharDataset::from_file("/nonexistent/input.txt"), data::DataError);
  CHECK_THROWS_AS(CharDataset::from_file("/dev/null"), data::DataError);  // not a regular file
  const std::string path = (std::filesystem::temp_directory_path() / "ringgrad_binary_corpus.bin").string();
  std::ofstream(path, std::ios::binary) << std::string("abc\0def", 7);
  CHECK_THROWS_AS(CharDataset::from_file(path), data::DataError);
  std::ofstream(path, std::ios::trunc).close();  // empty
  CHECK_THROWS_AS(CharDataset::from_file(path), data::DataError);
  std::filesystem::remove(path);
}

TEST_CASE("CosineSchedule: warmup, cosine, floor") {
  const CosineSchedule s{1e-3, 1e-4, 100, 2000};
  CHECK(s.at(0) == Approx(1e-5));
  CHECK(s.at(99) == Approx(1e-3));
  CHECK(s.at(100) == Approx(1e-3));
  CHECK(s.at(1050) == Approx(5.5e-4));  // halfway: the mean of peak and floor
  CHECK(s.at(2000) == Approx(1e-4));
  CHECK(s.at(5000) == Approx(1e-4));
}

TEST_CASE("WsdSchedule: warmup, the peak held, a straight cooldown over the last 40%, floor") {
  const WsdSchedule s{1e-3, 1e-4, 100, 2000, 0.4};
  CHECK(s.at(0) == Approx(1e-5));
  CHECK(s.at(99) == Approx(1e-3));
  CHECK(s.at(1200) == Approx(1e-3));   // the cooldown starts at 0.6 x 2000
  CHECK(s.at(1600) == Approx(5.5e-4));  // halfway down
  CHECK(s.at(1999) == Approx(1e-4 + 0.9e-3 / 800));
  CHECK(s.at(2000) == Approx(1e-4));
  CHECK(s.at(5000) == Approx(1e-4));
}

TEST_CASE("CharDataset::windows: every validation token predicted exactly once, the last window shorter") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text.push_back(static_cast<char>('a' + (i * 7) % 26));
  const CharDataset ds(text);  // validation: 100 tokens, so 99 predictions = 12 windows of 8 and one of 3
  REQUIRE(ds.window_count(Split::Val, 8) == 13);
  std::vector<std::int64_t> targets;
  const data::Batch full = ds.windows(Split::Val, 8, 0, 12);
  const data::Batch last = ds.windows(Split::Val, 8, 12, 1);
  CHECK(full.y.shape() == Shape{12, 8});
  CHECK(last.y.shape() == Shape{1, 3});
  for (const data::Batch* b : {&full, &last}) {
    const auto y = b->y.to_vector<std::int64_t>();
    targets.insert(targets.end(), y.begin(), y.end());
  }
  const std::vector<std::int64_t> val = ds.tokenizer().encode(text.substr(900));
  CHECK(targets == std::vector<std::int64_t>(val.begin() + 1, val.end()));  // tokens 1..99 of the split, in order
  CHECK(full.x.to_vector<std::int64_t>()[8] == val[8]);                      // window 1 starts at token 8
  CHECK_THROWS_AS(ds.windows(Split::Val, 8, 11, 2), std::out_of_range);     // a full window and the short one
  CHECK_THROWS_AS(ds.windows(Split::Val, 8, 13, 1), std::out_of_range);
}
