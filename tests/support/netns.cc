// NetnsPair and enter_netns: ip(8) commands to build and remove the pair, setns(2) to enter.
#include "tests/support/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace ringgrad::test {
namespace {

bool sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

}  // namespace

NetnsPair::NetnsPair(std::string name, std::string subnet) : name_(std::move(name)), subnet_(std::move(subnet)) {
  ok_ = sh(fmt::format("ip netns add {}a && ip netns add {}b", name_, name_)) &&
        sh(fmt::format("ip link add {}a type veth peer name {}b", name_, name_)) &&
        sh(fmt::format("ip link set {}a netns {}a && ip link set {}b netns {}b", name_, name_, name_, name_));
  for (char side : {'a', 'b'})
    ok_ = ok_ && sh(fmt::format("ip -n {0}{1} addr add {2}/24 dev {0}{1} && ip -n {0}{1} link set {0}{1} up && "
                                "ip -n {0}{1} link set lo up",
                                name_, side, address(side)));
}

NetnsPair::~NetnsPair() { sh(fmt::format("ip netns del {}a; ip netns del {}b", name_, name_)); }

void enter_netns(const std::string& name) {
  const int fd = ::open(fmt::format("/var/run/netns/{}", name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(fmt::format("cannot enter the network namespace {}", name));
  }
  ::close(fd);
}

}  // namespace ringgrad::test
