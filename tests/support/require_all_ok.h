// require_all_ok: the Catch2 check that every rank of a run_ranks() run ended well, with every
// rank's fate in the message when one did not.
#pragma once

#include <catch2/catch.hpp>

#include <vector>

#include "tests/support/multiprocess.h"

namespace ringgrad::test {

inline void require_all_ok(const std::vector<RankResult>& results) {
  INFO(describe(results));
  for (const auto& r : results) CHECK(r.ok());
}

}  // namespace ringgrad::test
