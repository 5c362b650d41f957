// NetnsPair: two "hosts" on one machine for multi-host tests: network namespaces <name>a and
// <name>b joined by a veth pair addressed <subnet>.1 and <subnet>.2 (the test's own addresses,
// nothing outside the pair is reached). Needs root and iproute2; ok() says whether it worked.
#pragma once

#include <string>

namespace ringgrad::test {

class NetnsPair {
 public:
  NetnsPair(std::string name, std::string subnet);
  /// Removes both namespaces (and with them the veth pair).
  ~NetnsPair();
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  bool ok() const { return ok_; }
  /// The namespace of side 'a' or 'b', and its address.
  std::string name(char side) const { return name_ + side; }
  std::string address(char side) const { return subnet_ + (side == 'a' ? ".1" : ".2"); }

 private:
  std::string name_, subnet_;
  bool ok_ = false;
};

/// Moves the calling process into network namespace `name` (before it opens any socket).
/// Throws std::runtime_error when it cannot.
void enter_netns(const std::string& name);

}  // namespace ringgrad::test
