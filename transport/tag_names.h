// How transport errors name a message's tag. A tag means something only to the layer that
// chose it: the collectives number their collectives' messages by sequence number and keep
// bits apart for send/recv and for their argument check (collectives/communicator.cc), so they
// register a describer and errors read "the data of collective #4" instead of a raw number.
#pragma once

#include <cstdint>
#include <string>

namespace ringgrad::transport {

/// The process's tag describer (the last one set wins); nullptr restores "tag N".
void set_tag_describer(std::string (*describe)(std::uint64_t tag));
/// The words for `tag` in an error: the describer's, or "tag N".
std::string describe_tag(std::uint64_t tag);

}  // namespace ringgrad::transport
