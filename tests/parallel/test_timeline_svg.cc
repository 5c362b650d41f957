// The timeline's SVG (nn/parallel/timeline.h) drawn from hand-made trace events: each row's
// label is there, the time axis' ticks are 1, 2 or 5 x 10^k ms apart from 0 to the window's
// length, and a span's box, read against the axis, starts and lasts what its event says.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <string>
#include <vector>

#include "nn/parallel/timeline.h"

using ringgrad::nn::parallel::timeline_svg;
using nlohmann::json;

namespace {

// Events on rank 0: a training thread and a DDP bucket's row, spans [t0, t0 + dur) in us.
std::string events(double t0, double dur) {
  json e = json::array();
  e.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 1}, {"args", {{"name", "training thread"}}}});
  e.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 2}, {"args", {{"name", "DDP bucket 0: ready -> reduced"}}}});
  e.push_back({{"name", "backward"}, {"cat", "backward"}, {"ph", "X"}, {"pid", 0}, {"tid", 1}, {"ts", t0}, {"dur", dur}});
  // The bucket: from 30% of the window to 80%.
  e.push_back({{"name", "bucket 0"}, {"cat", "ddp"}, {"ph", "X"}, {"pid", 0}, {"tid", 2}, {"ts", t0 + 0.3 * dur},
               {"dur", 0.5 * dur}});
  return e.dump();
}

struct Tick {
  double x;
  std::string label;
};

std::vector<Tick> ticks(const std::string& svg) {
  static const std::regex tick(R"re(<text x="([0-9.]+)" y="[0-9.]+" text-anchor="middle">([^<]*)</text>)re");
  std::vector<Tick> out;
  for (std::sregex_iterator it(svg.begin(), svg.end(), tick), end; it != end; ++it)
    out.push_back({std::stod((*it)[1]), (*it)[2]});
  return out;
}

}  // namespace

TEST_CASE("timeline SVG: row labels, a time axis in ms, and boxes that read right against it") {
  // A 10 ms window: 10 / 8 = 1.25 ms rounds up to ticks every 2 ms.
  const std::string svg = timeline_svg(events(1000, 10000));
  CHECK(svg.find(">rank 0: training thread</text>") != std::string::npos);
  CHECK(svg.find(">rank 0: DDP bucket 0: ready -&gt; reduced</text>") != std::string::npos);
  CHECK(svg.find(">time (ms), 10.0 in all</text>") != std::string::npos);
  const std::vector<Tick> axis = ticks(svg);
  std::vector<std::string> labels;
  for (const Tick& t : axis) labels.push_back(t.label);
  CHECK(labels == std::vector<std::string>{"0", "2", "4", "6", "8", "10"});
  REQUIRE(axis.size() == 6);
  const double px_per_ms = (axis.back().x - axis.front().x) / 10;
  for (std::size_t i = 0; i < axis.size(); ++i) CHECK(axis[i].x == Approx(axis[0].x + 2.0 * i * px_per_ms).margin(0.1));

  // The bucket's box, read off the axis: it starts at 3 ms and lasts 5 ms.
  std::smatch box;
  REQUIRE(std::regex_search(svg, box, std::regex(R"re(<rect x="([0-9.]+)" y="[0-9]+" width="([0-9.]+)"[^>]*><title>bucket 0 )re")));
  CHECK((std::stod(box[1]) - axis[0].x) / px_per_ms == Approx(3).margin(0.01));
  CHECK(std::stod(box[2]) / px_per_ms == Approx(5).margin(0.01));
}

TEST_CASE("timeline SVG: a window under 1 ms gets ticks with the decimals their step needs") {
  // 0.35 ms: 0.35 / 8 = 0.044 ms rounds up to ticks every 0.05 ms, 0 to 0.35.
  std::vector<std::string> labels;
  for (const Tick& t : ticks(timeline_svg(events(500, 350)))) labels.push_back(t.label);
  CHECK(labels == std::vector<std::string>{"0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30", "0.35"});
}
