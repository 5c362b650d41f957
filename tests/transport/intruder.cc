// The stranger's view: /proc for the listening sockets, raw sockets for the knocks.

#include "tests/transport/intruder.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "transport/error.h"
#include "transport/net.h"
#include "transport/rendezvous.h"
#include "transport/store_protocol.h"
#include "transport/wire.h"

namespace ringgrad::test {
namespace {

namespace net = transport::net;
namespace proto = transport::store_protocol;
namespace wire = transport::wire;
using namespace std::chrono_literals;

// The inodes of the sockets process pid holds ("socket:[12345]" links in /proc/<pid>/fd).
std::set<std::string> socket_inodes(int pid) {
  std::set<std::string> inodes;
  const std::string dir = fmt::format("/proc/{}/fd", pid);
  DIR* fds = ::opendir(dir.c_str());
  if (fds == nullptr) return inodes;
  while (dirent* entry = ::readdir(fds)) {
    char target[64] = {};
    if (::readlink(fmt::format("{}/{}", dir, entry->d_name).c_str(), target, sizeof target - 1) <= 0) continue;
    const std::string link = target;
    if (link.starts_with("socket:[")) inodes.insert(link.substr(8, link.size() - 9));
  }
  ::closedir(fds);
  return inodes;
}

// A row's local address: IPv4 as one 32-bit word, IPv6 as four, each printed in host order.
Listener decode(const std::string& hex_address, int family) {
  const size_t colon = hex_address.find(':');
  const auto port = std::stoul(hex_address.substr(colon + 1), nullptr, 16);
  char text[INET6_ADDRSTRLEN] = "?";
  bool loopback = false;
  if (family == AF_INET) {
    in_addr a{};
    a.s_addr = static_cast<uint32_t>(std::stoul(hex_address.substr(0, 8), nullptr, 16));
    ::inet_ntop(AF_INET, &a, text, sizeof text);
    loopback = (ntohl(a.s_addr) >> 24) == 127;
  } else {
    in6_addr a{};
    for (int i = 0; i < 4; ++i) {
      const auto word = static_cast<uint32_t>(std::stoul(hex_address.substr(8 * static_cast<size_t>(i), 8), nullptr, 16));
      std::memcpy(&a.s6_addr[4 * i], &word, 4);
    }
    ::inet_ntop(AF_INET6, &a, text, sizeof text);
    loopback = IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  return {fmt::format("{}:{}", text, port), loopback};
}

}  // namespace

std::vector<Listener> listeners_of(const std::vector<int>& pids) {
  std::set<std::string> inodes;
  for (int pid : pids) inodes.merge(socket_inodes(pid));
  std::vector<Listener> found;
  for (const auto& [file, family] : {std::pair{"/proc/net/tcp", AF_INET}, std::pair{"/proc/net/tcp6", AF_INET6}}) {
    std::ifstream table(file);
    std::string line;
    std::getline(table, line);  // the column names
    while (std::getline(table, line)) {
      std::istringstream row(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      row >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode) != 0) found.push_back(decode(local, family));  // 0A: LISTEN
    }
  }
  return found;
}

std::vector<int> siblings() {
  std::vector<int> pids;
  const pid_t parent = ::getppid();
  DIR* proc = ::opendir("/proc");
  while (dirent* entry = proc != nullptr ? ::readdir(proc) : nullptr) {
    const int pid = std::atoi(entry->d_name);
    if (pid <= 0) continue;
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) pids.push_back(pid);
  }
  if (proc != nullptr) ::closedir(proc);
  return pids;
}

std::vector<std::string> knock_on_the_job(const transport::Config& config, transport::Store& store,
                                          std::vector<transport::net::Fd>& silent) {
  const auto deadline = net::Clock::now() + 10s;
  std::vector<std::string> from;
  const auto open = [&](const std::string& host, uint16_t port) {
    net::Fd fd = net::connect(host, port, deadline, "knock");
    from.push_back(net::local_name(fd.get()));
    return fd;
  };
  // Sends bytes and reads until the other side closes: refused (an answer, then closed) or dropped.
  const auto refused = [&](net::Fd fd, const std::vector<std::byte>& bytes, const std::string& what) {
    net::write_all(fd.get(), bytes, deadline, what);
    std::array<std::byte, 64> sink{};
    try {
      for (;;) net::read_exact(fd.get(), std::span(sink).first(1), deadline, what);
    } catch (const transport::TransportError& e) {
      if (std::string(e.what()).find("closed the connection") == std::string::npos &&
          std::string(e.what()).find("reset") == std::string::npos)
        throw std::runtime_error(fmt::format("{}: not closed: {}", what, e.what()));
    }
  };
  // The store: a hello with a wrong token, one without, and garbage.
  const auto store_hello = [&](const std::string& token) {
    return proto::encode_request(proto::Op::hello, config.job_id, proto::encode_hello_value({7, token}), 0);
  };
  refused(open(config.master_addr, config.master_port), store_hello("not-" + config.job_token), "store, wrong token");
  refused(open(config.master_addr, config.master_port), store_hello(""), "store, no token");
  refused(open(config.master_addr, config.master_port), std::vector<std::byte>(24, std::byte{0x41}), "store, garbage");
  silent.push_back(net::connect(config.master_addr, config.master_port, deadline, "silent on the store"));
  // Rank 0's listener, found as a rank finds it.
  const std::string rank0 = store.get(transport::address_key(0));
  const size_t colon = rank0.rfind(':');
  const std::string host = rank0.substr(0, colon);
  const auto port = static_cast<uint16_t>(std::stoi(rank0.substr(colon + 1)));
  refused(open(host, port), wire::encode_hello({config.rank, config.world_size, config.job_id, "not-" + config.job_token}),
          "rank 0, wrong token");
  refused(open(host, port), wire::encode_hello({config.rank, config.world_size, config.job_id, ""}), "rank 0, no token");
  silent.push_back(net::connect(host, port, deadline, "silent on rank 0"));
  return from;
}

}  // namespace ringgrad::test
