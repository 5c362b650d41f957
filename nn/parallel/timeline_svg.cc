// The timeline drawn as SVG, for readers without a trace viewer: a band per (rank, row), time
// across, one box per span on the lane of its nesting depth, coloured by category, and under
// the bands a time axis in ms from the first span, its ticks 1, 2 or 5 x 10^k ms apart with a
// faint line up through the bands at each, so a span's length can be read off.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "nn/parallel/timeline.h"

namespace ringgrad::nn::parallel {
namespace {

struct Box {
  std::string name, category;
  double t0, t1;
  int depth = 0;
};

const char* colour(const std::string& category) {
  static const std::map<std::string, const char*> colours{
      {"forward", "#4c9be8"},    {"backward", "#e8894c"}, {"backward pass", "#f6dcc6"}, {"collective", "#59b36b"},
      {"ddp", "#a37acc"},        {"wait", "#d9534f"},     {"step", "#8c8c8c"},            {"pipeline", "#c8c8c8"},
      {"ring_attention", "#5bc0de"}, {"transfer", "#a6d96a"}};
  const auto it = colours.find(category);
  return it == colours.end() ? "#bbbbbb" : it->second;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

// The axis' tick spacing for a window of `span_ms`: the 1, 2 or 5 x 10^k ms that gives 3 to 8
// intervals across it (a step below 1 ms is printed with its own decimals).
double tick_step_ms(double span_ms) {
  const double raw = span_ms / 8, power = std::pow(10.0, std::floor(std::log10(raw))), fraction = raw / power;
  return (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
}

}  // namespace

std::string timeline_svg(const std::string& events_json) {
  const auto events = nlohmann::json::parse(events_json);
  std::map<std::pair<int, int>, std::vector<Box>> rows;  // (pid, tid) -> spans
  std::map<std::pair<int, int>, std::string> names;
  double begin = 1e300, end = -1e300;
  for (const auto& e : events) {
    const std::pair<int, int> row{e.value("pid", 0), e.value("tid", 0)};
    if (e["ph"] == "M" && e["name"] == "thread_name") names[row] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    const double t0 = e["ts"], t1 = t0 + e["dur"].get<double>();
    rows[row].push_back({e["name"], e["cat"], t0, t1});
    begin = std::min(begin, t0), end = std::max(end, t1);
  }
  if (rows.empty()) begin = end = 0;
  constexpr double kLeft = 260, kWidth = 1100, kLane = 14, kTop = 30;
  const double scale = kWidth / std::max(1.0, end - begin);
  std::string body;
  double y = kTop;
  for (auto& [row, boxes] : rows) {
    // Lanes by nesting: a span inside the one before it goes one lane down.
    std::sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) { return a.t0 != b.t0 ? a.t0 < b.t0 : a.t1 > b.t1; });
    std::vector<double> open;  // end times of the enclosing spans
    int lanes = 1;
    for (Box& b : boxes) {
      while (!open.empty() && open.back() <= b.t0) open.pop_back();
      b.depth = static_cast<int>(open.size());
      open.push_back(b.t1);
      lanes = std::max(lanes, b.depth + 1);
    }
    const std::string label = fmt::format("rank {}: {}", row.first, names.count(row) ? names[row] : fmt::format("thread {}", row.second));
    body += fmt::format(R"(<text x="4" y="{:.0f}">{}</text>)", y + 11, escaped(label));
    for (const Box& b : boxes) {
      const double x = kLeft + (b.t0 - begin) * scale, w = std::max(0.5, (b.t1 - b.t0) * scale);
      body += fmt::format(R"(<rect x="{:.1f}" y="{:.0f}" width="{:.1f}" height="{}" fill="{}"><title>{} ({:.0f} us)</title></rect>)",
                          x, y + b.depth * kLane, w, kLane - 2, colour(b.category), escaped(b.name), b.t1 - b.t0);
      if (w > 7.0 * static_cast<double>(b.name.size()))
        body += fmt::format(R"(<text x="{:.1f}" y="{:.0f}" font-size="10">{}</text>)", x + 2, y + b.depth * kLane + 10,
                            escaped(b.name));
    }
    y += lanes * kLane + 8;
  }
  std::string legend;
  double lx = kLeft;
  for (const char* category : {"forward", "backward", "collective", "ddp", "wait", "step", "pipeline", "ring_attention", "transfer"}) {
    legend += fmt::format(R"(<rect x="{:.0f}" y="8" width="10" height="10" fill="{}"/><text x="{:.0f}" y="17">{}</text>)", lx,
                          colour(category), lx + 14, category);
    lx += 100;
  }
  // The time axis under the bands; its grid lines go first so that the boxes cover them.
  const double span_ms = std::max(1.0, end - begin) / 1e3, step = tick_step_ms(span_ms), axis_y = y + 2;
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  std::string grid, axis = fmt::format(R"(<line x1="{:.0f}" y1="{:.0f}" x2="{:.0f}" y2="{:.0f}" stroke="black"/>)"
                                       R"(<text x="{:.0f}" y="{:.0f}" text-anchor="end">time (ms), {:.1f} in all</text>)",
                                       kLeft, axis_y, kLeft + kWidth, axis_y, kLeft - 10, axis_y + 16, span_ms);
  for (int i = 0; i * step <= span_ms * (1 + 1e-9); ++i) {
    const double x = kLeft + i * step * 1e3 * scale;
    grid += fmt::format(R"(<line x1="{:.1f}" y1="{:.0f}" x2="{:.1f}" y2="{:.0f}" stroke="#e6e6e6"/>)", x, kTop - 4, x, axis_y);
    axis += fmt::format(R"(<line x1="{:.1f}" y1="{:.0f}" x2="{:.1f}" y2="{:.0f}" stroke="black"/>)"
                        R"(<text x="{:.1f}" y="{:.0f}" text-anchor="middle">{:.{}f}</text>)",
                        x, axis_y, x, axis_y + 5, x, axis_y + 16, i * step, decimals);
  }
  return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" font-family="sans-serif" )"
                     R"(font-size="11"><rect width="100%" height="100%" fill="white"/>{}{}{}{}</svg>)",
                     kLeft + kWidth + 20, axis_y + 26, legend, grid, body, axis);
}

}  // namespace ringgrad::nn::parallel
