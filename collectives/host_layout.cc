// HostLayout from the rendezvous records: "ip:port" per rank, grouped by ip.
#include "collectives/host_layout.h"

#include <algorithm>
#include <map>
#include <string>

#include "transport/rendezvous.h"

namespace ringgrad::collectives {

int HostLayout::hosts() const {
  return host_of.empty() ? 0 : *std::max_element(host_of.begin(), host_of.end()) + 1;
}

bool HostLayout::uniform() const {
  std::vector<int> count(static_cast<std::size_t>(hosts()), 0);
  for (int h : host_of) ++count[static_cast<std::size_t>(h)];
  return std::all_of(count.begin(), count.end(), [&](int c) { return c == count.front(); });
}

std::vector<int> HostLayout::local_ranks(int rank) const {
  std::vector<int> out;
  for (int q = 0; q < world_size(); ++q)
    if (host_of[static_cast<std::size_t>(q)] == host_of[static_cast<std::size_t>(rank)]) out.push_back(q);
  return out;
}

std::vector<int> HostLayout::cross_ranks(int rank) const {
  const std::vector<int> mine = local_ranks(rank);
  const auto position = std::find(mine.begin(), mine.end(), rank) - mine.begin();
  std::vector<std::vector<int>> by_host(static_cast<std::size_t>(hosts()));
  for (int q = 0; q < world_size(); ++q) by_host[static_cast<std::size_t>(host_of[static_cast<std::size_t>(q)])].push_back(q);
  std::vector<int> out;
  for (const auto& ranks : by_host) out.push_back(ranks[static_cast<std::size_t>(position)]);
  return out;
}

HostLayout HostLayout::subset(const std::vector<int>& ranks) const {
  HostLayout layout;
  std::map<int, int> index;  // host here -> host in the subset
  for (int q : ranks) {
    const auto [it, added] = index.emplace(host_of[static_cast<std::size_t>(q)], static_cast<int>(index.size()));
    layout.host_of.push_back(it->second);
  }
  return layout;
}

HostLayout HostLayout::from_store(transport::Store& store, int world_size) {
  HostLayout layout;
  std::map<std::string, int> index;  // ip -> host
  for (int q = 0; q < world_size; ++q) {
    const std::string address = store.get(transport::address_key(q));
    const std::string ip = address.substr(0, address.rfind(':'));
    const auto [it, added] = index.emplace(ip, static_cast<int>(index.size()));
    layout.host_of.push_back(it->second);
  }
  return layout;
}

}  // namespace ringgrad::collectives
