// Topology: named link figures, hop numbering, paths, and the preset and JSON forms.
//
// Hops: out ports of devices [0, p), in ports [p, 2p), NIC sends [2p, 2p+N), NIC receives
// [2p+N, 2p+2N) with N NICs (p, or one per host), then H uplinks and H downlinks.
#include "collectives/sim/topology.h"

#include "collectives/comm_options.h"

#include <charconv>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ringgrad::collectives::sim {
namespace {

constexpr double kUs = 1e-6, kGB = 1e9;

// Per direction. NVLink and InfiniBand: alpha is NCCL's per-step latency of its ring with the
// Simple protocol (hwLat in NCCL's src/graph/tuning.cc: 3.4 us over NVLink, 9.6 us over the
// network), bandwidth the vendor's link rate (NVLink 4: 900 GB/s both ways per GPU on H100;
// NVLink 5: 1.8 TB/s on B200/B300; ConnectX-7: 400 Gb/s; ConnectX-8: 800 Gb/s). shm, tcp and
// tcp1g: measured by `all_reduce_perf --calibrate` (docs/sim.md: the machine and the command).
struct Named {
  const char* name;
  double alpha_us, gb_per_s;
  bool duplex;
};
constexpr Named kNamed[] = {
    {"shm", 0.58, 23.1, true},  {"tcp", 33.9, 2.89, true}, {"tcp1g", 62.4, 0.127, true}, {"nvlink4", 3.4, 450, true},
    {"nvlink5", 3.4, 900, true}, {"ib400", 9.6, 50, true},  {"ib800", 9.6, 100, true},
};

const Named& named(std::string_view name) {
  for (const Named& n : kNamed)
    if (name == n.name) return n;
  throw std::invalid_argument(fmt::format("unknown link '{}': expected shm, tcp, tcp1g, nvlink4, nvlink5, ib400 or ib800", name));
}

// Reduction and copy speed of a rank's memory. GPU: a reduction reads two bytes and writes one
// per byte reduced, a copy reads one and writes one, at HBM3e's 8 TB/s (B200; H100's HBM3: 3.35).
// CPU: the cost model's default gamma (a float32 sum), a copy half of it (cost_model.cc's Bruck).
void set_memory(Topology& t, std::string_view intra) {
  t.device_memory = intra == "nvlink4" || intra == "nvlink5";
  if (t.device_memory) {
    const double hbm = (intra == "nvlink5" ? 8e12 : 3.35e12);
    t.gamma = 3 / hbm;
    t.copy_beta = 2 / hbm;
  } else {
    t.gamma = CostModel{}.gamma;
    t.copy_beta = t.gamma / 2;
  }
}

LinkFigures figures_from_json(const nlohmann::json& j, const char* key) {
  if (j.is_string()) return link_figures(j.get<std::string>());
  if (!j.is_object() || !j.contains("alpha_us") || !j.contains("GBps"))
    throw std::invalid_argument(fmt::format("topology: \"{}\" must be a link's name or {{\"alpha_us\": .., \"GBps\": ..}}", key));
  return LinkFigures{key, j["alpha_us"].get<double>() * kUs, 1 / (j["GBps"].get<double>() * kGB), j.value("duplex", true)};
}

Topology from_json(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::invalid_argument(fmt::format("topology: cannot read {}", file));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(fmt::format("topology: {} is not JSON: {}", file, e.what()));
  }
  Topology t;
  t.hosts = j.value("hosts", 1);
  t.ranks_per_host = j.value("ranks_per_host", 1);
  t.intra = figures_from_json(j.value("intra", nlohmann::json("shm")), "intra");
  t.inter = figures_from_json(j.value("inter", nlohmann::json("tcp")), "inter");
  const std::string nic = j.value("nic", "rank");
  if (nic != "rank" && nic != "host") throw std::invalid_argument("topology: \"nic\" must be \"rank\" or \"host\"");
  t.nic_per_rank = nic == "rank";
  if (j.contains("uplink_GBps")) t.uplink_beta = 1 / (j["uplink_GBps"].get<double>() * kGB);
  set_memory(t, j.contains("intra") && j["intra"].is_string() ? j["intra"].get<std::string>() : "shm");
  if (j.contains("reduce_GBps")) t.gamma = 1 / (j["reduce_GBps"].get<double>() * kGB);
  if (j.contains("copy_GBps")) t.copy_beta = 1 / (j["copy_GBps"].get<double>() * kGB);
  return t;
}

int parse_int(std::string_view s, const char* what) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1)
    throw std::invalid_argument(fmt::format("topology: {} '{}' is not a whole number of 1 or more", what, s));
  return v;
}

}  // namespace

LinkFigures link_figures(std::string_view name) {
  const Named& n = named(name);
  return LinkFigures{n.name, n.alpha_us * kUs, 1 / (n.gb_per_s * kGB), n.duplex};
}

HostLayout Topology::layout() const {
  HostLayout l;
  for (int r = 0; r < world_size(); ++r) l.host_of.push_back(host_of(r));
  return l;
}

int Topology::hop_count() const {
  const int p = devices(), nics = nic_per_rank ? p : hosts;
  return 2 * p + 2 * nics + (uplink_beta > 0 ? 2 * hosts : 0);
}

double Topology::hop_beta(int hop) const {
  const int p = devices(), nics = nic_per_rank ? p : hosts;
  if (hop < 2 * p) return intra.beta;
  if (hop < 2 * p + 2 * nics) return inter.beta;
  return uplink_beta;
}

Path Topology::path(int src_rank, int dst_rank) const {
  const int p = devices(), nics = nic_per_rank ? p : hosts;
  const int src = src_rank % p, dst = dst_rank % p;  // devices
  const int hs = host_of(src), hd = host_of(dst);
  if (src == dst) return Path{};
  if (hs == hd) return Path{{src, intra.duplex ? p + dst : dst}, 2, intra.alpha};
  const int ns = nic_per_rank ? src : hs, nd = nic_per_rank ? dst : hd;
  if (uplink_beta <= 0) return Path{{2 * p + ns, 2 * p + nics + nd}, 2, inter.alpha};
  const int up = 2 * p + 2 * nics;
  return Path{{2 * p + ns, up + hs, up + hosts + hd, 2 * p + nics + nd}, 4, inter.alpha};
}

std::size_t Topology::chunk_bytes() const {
  const CommOptions defaults;
  return device_memory ? defaults.device_chunk_bytes : defaults.chunk_bytes;
}

CostModel Topology::cost_model(std::size_t chunk_bytes) const {
  CostModel m;
  const LinkFigures& across = hosts > 1 ? inter : intra;
  m.alpha = across.alpha;
  m.beta = hosts > 1 ? std::max(inter.beta, uplink_beta) : intra.beta;
  m.alpha_local = intra.alpha;
  m.beta_local = intra.beta;
  m.gamma = gamma;
  m.chunk_bytes = chunk_bytes;
  return m;
}

std::string Topology::describe() const {
  auto link = [](const LinkFigures& f) {
    return fmt::format("{} ({:.2f} us, {:.3g} GB/s{})", f.name, f.alpha / kUs, 1 / f.beta / kGB,
                       f.duplex ? "" : ", one port each way");
  };
  std::string s = fmt::format("{} host{} x {} rank{}; inside a host {}", hosts, hosts == 1 ? "" : "s", ranks_per_host,
                              ranks_per_host == 1 ? "" : "s", link(intra));
  if (hosts > 1) s += fmt::format("; between hosts {}, a NIC per {}", link(inter), nic_per_rank ? "rank" : "host");
  if (uplink_beta > 0) s += fmt::format(", host uplinks {:.3g} GB/s", 1 / uplink_beta / kGB);
  if (gamma > 0) s += fmt::format("; reduce {:.3g} GB/s, copy {:.3g} GB/s", 1 / gamma / kGB, 1 / copy_beta / kGB);
  return s;
}

Topology Topology::parse(std::string_view spec) {
  if (spec.ends_with(".json")) return from_json(std::string(spec));
  Topology t;
  t.intra = link_figures("shm");
  t.inter = link_figures("tcp");
  std::string intra_name = "shm";
  std::size_t start = 0;
  while (start <= spec.size()) {
    const std::size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq), value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (key == "hosts") {
      const std::size_t x = value.find('x');
      if (x == std::string_view::npos)
        throw std::invalid_argument(fmt::format("topology: hosts={} must read HOSTSxRANKS, as 4x8", value));
      t.hosts = parse_int(value.substr(0, x), "hosts");
      t.ranks_per_host = parse_int(value.substr(x + 1), "ranks per host");
    } else if (key == "intra") {
      t.intra = link_figures(value);
      intra_name = value;
    } else if (key == "inter") {
      t.inter = link_figures(value);
    } else if (key == "nic") {
      if (value != "rank" && value != "host")
        throw std::invalid_argument(fmt::format("topology: nic={} must be rank or host", value));
      t.nic_per_rank = value == "rank";
    } else if (key == "uplink") {
      t.uplink_beta = 1 / (parse_int(value, "uplink GB/s") * kGB);
    } else {
      throw std::invalid_argument(
          fmt::format("topology: unknown key '{}' in '{}': expected hosts, intra, inter, nic, uplink, "
                      "or a .json file",
                      key, spec));
    }
  }
  set_memory(t, intra_name);
  return t;
}

Topology Topology::uniform(int p, double alpha, double beta, double gamma, double copy_beta) {
  Topology t;
  t.hosts = p;
  t.ranks_per_host = 1;
  t.intra = t.inter = LinkFigures{"uniform", alpha, beta};
  t.gamma = gamma;
  t.copy_beta = copy_beta;
  return t;
}

}  // namespace ringgrad::collectives::sim
