// Fuzz targets for the parsers that read bytes from the network: the frame header, the hello
// and reply (wire.h), and the store's messages (store_protocol.h). libFuzzer drives them
// (scripts/fuzz_transport.sh); the unit tests replay the committed corpus through them with g++.
// Each returns 0, and aborts when a parser accepts bytes that do not encode back to themselves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringgrad::transport::fuzz {

/// data[0] picks the parser (frame header, hello, reply), the rest is its input.
int wire(const uint8_t* data, size_t size);
/// data[0] picks the parser (request, response header), the rest is its input.
int store(const uint8_t* data, size_t size);

}  // namespace ringgrad::transport::fuzz
