// The parsers of bytes from the network, with g++: every case of the committed fuzz corpus
// goes through the fuzz targets (which abort on a round-trip failure), and the interesting
// ones are checked one by one: accepted with the right fields, or refused with the right reason.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "transport/error.h"
#include "transport/fuzz/fuzz_targets.h"
#include "transport/store_protocol.h"
#include "transport/wire.h"

namespace {

namespace fs = std::filesystem;
namespace wire = ringgrad::transport::wire;
namespace proto = ringgrad::transport::store_protocol;
using ringgrad::transport::TransportError;

const fs::path corpus = FUZZ_CORPUS;

// A corpus case without its leading selector byte.
std::vector<std::byte> input(const std::string& target, const std::string& name) {
  std::ifstream in(corpus / target / name, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  REQUIRE(!bytes.empty());
  std::vector<std::byte> out(bytes.size() - 1);
  for (size_t i = 1; i < bytes.size(); ++i) out[i - 1] = static_cast<std::byte>(bytes[i]);
  return out;
}

std::string error_of(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const TransportError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every fuzz corpus case goes through its fuzz target") {
  int cases = 0;
  for (const char* target : {"wire", "store"}) {
    for (const auto& entry : fs::directory_iterator(corpus / target)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
      if (std::string(target) == "wire") ringgrad::transport::fuzz::wire(bytes.data(), bytes.size());
      else ringgrad::transport::fuzz::store(bytes.data(), bytes.size());
      ++cases;
    }
  }
  CHECK(cases >= 30);
}

TEST_CASE("frame headers: fields in place, a stream, 64-bit lengths and bad magic refused") {
  auto valid = input("wire", "frame_valid");
  auto h = wire::decode_frame(std::span<const std::byte, 32>(valid.data(), 32));
  CHECK((h.stream == 0 && h.seq == 3 && h.tag == 7 && h.length == 100));
  auto max = input("wire", "frame_max_length");
  CHECK(wire::decode_frame(std::span<const std::byte, 32>(max.data(), 32)).length == UINT64_MAX);
  auto bad = input("wire", "frame_bad_magic");
  CHECK_THAT(error_of([&] { wire::decode_frame(std::span<const std::byte, 32>(bad.data(), 32)); }), Catch::Contains("magic 0x41414141"));
  auto stream = input("wire", "frame_stream");
  CHECK(wire::decode_frame(std::span<const std::byte, 32>(stream.data(), 32)).stream == 5);
}

TEST_CASE("hellos: bounded job id and token, rank below world size and exact length") {
  auto hello = wire::decode_hello(input("wire", "hello_valid"));
  CHECK((hello.rank == 1 && hello.world_size == 2 && hello.job_id == "job" && hello.token == "tok"));
  auto max = wire::decode_hello(input("wire", "hello_max_job"));
  CHECK((max.job_id == std::string(256, 'j') && max.token == std::string(256, 't')));
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"hello_job_over_bound", "job id of 257 bytes (at most 256)"},
      {"hello_job_length_lies", "job id of 60000 bytes"},
      {"hello_token_over_bound", "job token of 257 bytes (at most 256)"},
      {"hello_token_length_lies", "its header says 223"},
      {"hello_reserved_set", "reserved field is not 0"},
      {"hello_rank_not_below_world", "rank 2 of world size 2"},
      {"hello_world_zero", "rank 0 of world size 0"},
      {"hello_world_huge", "world size 4294967295"},
      {"hello_bad_version", "protocol version 2, this build speaks 3"},
      {"hello_truncated", "shorter than its fixed part"},
  };
  for (const auto& [name, reason] : refused) {
    INFO(name);
    CHECK_THAT(error_of([&] { wire::decode_hello(input("wire", name)); }), Catch::Contains(reason));
  }
}

TEST_CASE("store messages: every op round-trips and lengths are bounded before allocation") {
  auto set = proto::decode_request(input("store", "request_set"));
  CHECK((set.op == proto::Op::set && set.key == "key" && set.value == "v" && set.timeout_ms == 100));
  CHECK(proto::decode_i64(proto::decode_request(input("store", "request_add")).value) == -5);
  auto hello = proto::decode_request(input("store", "request_hello"));
  const proto::HelloValue value = proto::decode_hello_value(hello.value);
  CHECK((hello.op == proto::Op::hello && hello.key == "job" && value.rank == 1 && value.token == "tok"));
  CHECK_THAT(error_of([] { proto::decode_hello_value("abc"); }), Catch::Contains("a hello value of 3 bytes"));
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"request_unknown_op", "unknown op 9"},
      {"request_op_zero", "unknown op 0"},
      {"request_reserved_set", "reserved field"},
      {"request_key_over_bound", "key of 4097 bytes"},
      {"request_value_over_bound", "value of 67108865 bytes"},
      {"request_value_length_lies", "value of 18446744073709551615 bytes"},
      {"request_lengths_sum_overflow", "value of 18446744073709547520 bytes"},
      {"request_truncated", "after the header, it announces 3 + 1"},
      {"request_bad_magic", "magic 0x00000000"},
  };
  for (const auto& [name, reason] : refused) {
    INFO(name);
    CHECK_THAT(error_of([&] { proto::decode_request(input("store", name)); }), Catch::Contains(reason));
  }
  auto response = input("store", "response_value_over_bound");
  CHECK_THAT(error_of([&] { proto::decode_response_header(std::span<const std::byte, 16>(response.data(), 16)); }),
             Catch::Contains("value of 67108865 bytes"));
}
