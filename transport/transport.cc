// Placeholder bodies so that code written against transport.h links; replaced by the engine.
#include "transport/transport.h"

namespace ringgrad::transport {
namespace detail {
struct Op {};
class Engine {};
}  // namespace detail

namespace {
[[noreturn]] void todo() { throw TransportError("ringgrad transport: not implemented yet"); }
}  // namespace

Request::Request(std::unique_ptr<detail::Op> op) : op_(std::move(op)) {}
Request::Request(Request&&) noexcept = default;
Request& Request::operator=(Request&&) noexcept = default;
Request::~Request() = default;
void Request::wait() { todo(); }
bool Request::test() { todo(); }

Transport::Transport(const Config&) { todo(); }
Transport::~Transport() = default;
int Transport::rank() const { todo(); }
int Transport::world_size() const { todo(); }
std::chrono::milliseconds Transport::timeout() const { todo(); }
void Transport::send(int, std::span<const std::byte>, uint64_t) { todo(); }
void Transport::recv(int, std::span<std::byte>, uint64_t) { todo(); }
Request Transport::isend(int, std::span<const std::byte>, uint64_t) { todo(); }
Request Transport::irecv(int, std::span<std::byte>, uint64_t) { todo(); }
Store& Transport::store() { todo(); }

}  // namespace ringgrad::transport
