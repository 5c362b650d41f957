// World: the ranks' links, a run from time 0, and address space without memory behind it.
#include "collectives/sim/world.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

#include "collectives/sim/sim_link.h"

namespace ringgrad::collectives::sim {

// Address space mapped PROT_NONE: reserved, never backed by memory, faulting on any access.
struct World::Reservation {
  std::byte* base;
  std::size_t size;
  explicit Reservation(std::size_t bytes) : size(bytes) {
    void* m = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      throw std::system_error(errno, std::generic_category(),
                              "sizes-only buffers: reserving " + std::to_string(bytes) + " bytes");
    base = static_cast<std::byte*>(m);
  }
  ~Reservation() { ::munmap(base, size); }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
};

World::World(Topology topology, WorldOptions options)
    : topology_(std::move(topology)),
      options_(std::move(options)),
      engine_(topology_.world_size(), options_.fibers),
      network_(topology_, engine_, options_.payload, options_.window_chunks * options_.chunk_bytes),
      finish_(static_cast<std::size_t>(topology_.world_size()), 0.0) {
  for (int r = 0; r < size(); ++r) links_.push_back(std::make_unique<SimLink>(*this, r));
}

World::~World() = default;

double World::run(const std::function<void(SimLink&)>& body) {
  network_.reset();
  std::fill(finish_.begin(), finish_.end(), 0.0);
  engine_.run([&](int r) {
    body(*links_[static_cast<std::size_t>(r)]);
    finish_[static_cast<std::size_t>(r)] = engine_.clock(r);
  });
  return *std::max_element(finish_.begin(), finish_.end());
}

std::byte* World::unbacked(std::size_t bytes) {
  for (const auto& r : reserved_)
    if (r->size >= bytes) return r->base;
  constexpr std::size_t kGiB = std::size_t{1} << 30;
  reserved_.push_back(std::make_unique<Reservation>(std::max(kGiB, (bytes + kGiB - 1) / kGiB * kGiB)));
  return reserved_.back()->base;
}

}  // namespace ringgrad::collectives::sim
