// fmt prints ringgrad's enums by name: fmt::format("{}", CollKind::kAllReduce) is "all_reduce",
// and likewise Algo ("ring"), Backend ("nccl"), DType ("float") and ReduceOp ("sum").
#pragma once

#include <string_view>

#include <fmt/format.h>

#include "collectives/algo.h"
#include "collectives/dtype.h"

namespace ringgrad::collectives {

/// A formatter that prints `e` as name(e).
template <typename E, std::string_view (*name)(E)>
struct NamedEnumFormatter : fmt::formatter<std::string_view> {
  auto format(E e, fmt::format_context& ctx) const { return fmt::formatter<std::string_view>::format(name(e), ctx); }
};

}  // namespace ringgrad::collectives

template <>
struct fmt::formatter<ringgrad::collectives::CollKind>
    : ringgrad::collectives::NamedEnumFormatter<ringgrad::collectives::CollKind, ringgrad::collectives::coll_name> {};
template <>
struct fmt::formatter<ringgrad::collectives::Algo>
    : ringgrad::collectives::NamedEnumFormatter<ringgrad::collectives::Algo, ringgrad::collectives::algo_name> {};
template <>
struct fmt::formatter<ringgrad::collectives::Backend>
    : ringgrad::collectives::NamedEnumFormatter<ringgrad::collectives::Backend, ringgrad::collectives::backend_name> {};
template <>
struct fmt::formatter<ringgrad::collectives::DType>
    : ringgrad::collectives::NamedEnumFormatter<ringgrad::collectives::DType, ringgrad::collectives::dtype_name> {};
template <>
struct fmt::formatter<ringgrad::collectives::ReduceOp>
    : ringgrad::collectives::NamedEnumFormatter<ringgrad::collectives::ReduceOp, ringgrad::collectives::reduce_op_name> {};
