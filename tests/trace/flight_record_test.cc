// The flight record's format (trace/flight_record.h), which the flight recorder writes and the
// launcher's desync report reads: a record read back from its JSON is the record written, field
// by field; text that is not a record reads as none; a group's record is told from the world's.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "trace/flight_record.h"

using namespace ringgrad::trace;

TEST_CASE("a flight record read back from its JSON is the record written") {
  const FlightRecord written{3, "rank 3", {
      {19, "all_reduce", 1 << 20, "float32", "ring", CollectiveState::kCompleted, 10.25, 10.5, 10.75},
      {20, "all_gather", 4096, "bfloat16", "one_shot", CollectiveState::kStarted, 11.0, 11.125, 0},
      {21, "broadcast", 8, "int64", "tree", CollectiveState::kQueued, 11.5, 0, 0},
      {22, "barrier", 0, "uint8", "ring", CollectiveState::kFailed, 12.0, 12.0, 15.0}}};
  const std::optional<FlightRecord> read = parse_flight_record(to_json(written));
  REQUIRE(read.has_value());
  CHECK(read->rank == 3);
  CHECK(read->who == "rank 3");
  REQUIRE(read->entries.size() == written.entries.size());
  for (std::size_t i = 0; i < written.entries.size(); ++i) {
    const FlightRecordEntry &a = written.entries[i], &b = read->entries[i];
    INFO("entry " << i);
    CHECK(b.seq == a.seq);
    CHECK(b.kind == a.kind);
    CHECK(b.bytes == a.bytes);
    CHECK(b.dtype == a.dtype);
    CHECK(b.algo == a.algo);
    CHECK(b.state == a.state);
    CHECK(b.queued_s == a.queued_s);
    CHECK(b.started_s == a.started_s);
    CHECK(b.ended_s == a.ended_s);
  }
}

TEST_CASE("text that is not a flight record reads as none") {
  CHECK_FALSE(parse_flight_record("not json").has_value());
  CHECK_FALSE(parse_flight_record(R"({"who": "rank 0", "entries": []})").has_value());  // no rank
  CHECK_FALSE(parse_flight_record(R"({"rank": 0, "who": "rank 0", "entries": [{"seq": 1}]})").has_value());
  const std::string entry = R"({"seq": 1, "kind": "all_reduce", "bytes": 8, "dtype": "float32", "algo": "ring",
                                 "queued_s": 1, "started_s": 0, "ended_s": 0, "state": )";
  CHECK(parse_flight_record(R"({"rank": 0, "who": "rank 0", "entries": [)" + entry + R"("queued"}]})").has_value());
  CHECK_FALSE(parse_flight_record(R"({"rank": 0, "who": "rank 0", "entries": [)" + entry + R"("lost"}]})").has_value());
}

TEST_CASE("a group's record is told from the world's by its who") {
  CHECK(FlightRecord{1, "rank 1", {}}.of_world());
  CHECK_FALSE(FlightRecord{0, "rank 0 of group tp (job rank 2; the group is job ranks 2, 3)", {}}.of_world());
}
