// The flight recorder's ring buffer, its JSON, and the SIGUSR1 watcher that dumps every live
// recorder of the process.
#include "collectives/flight_recorder.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "collectives/comm_options.h"
namespace ringgrad::collectives {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Every live recorder of this process, for the SIGUSR1 watcher. The handler only writes a byte
// to a pipe (async-signal-safe); a thread reads it and dumps.
struct Registry {
  std::mutex mutex;
  std::set<const FlightRecorder*> recorders;
  int pipe[2] = {-1, -1};
  int next_id = 0;

  static Registry& get() {
    static Registry* r = new Registry;  // never destroyed: the watcher may outlive main's statics
    return *r;
  }
  void start_watcher() {  // once, at the first recorder
    if (pipe[0] >= 0 || ::pipe2(pipe, O_CLOEXEC) != 0) return;
    struct sigaction sa {};
    sa.sa_handler = [](int) {
      const char byte = 1;
      [[maybe_unused]] const auto n = ::write(Registry::get().pipe[1], &byte, 1);
    };
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGUSR1, &sa, nullptr);
    std::thread([this] {
      char byte;
      while (::read(pipe[0], &byte, 1) == 1) {
        std::lock_guard lock(mutex);
        for (const FlightRecorder* r : recorders) r->dump();
      }
    }).detach();
  }
};

// gettid is a system call, and on a kernel with page-table isolation a system call costs about
// as much as a small all-reduce over shared memory: ask once per thread.
int this_thread_id() {
  thread_local const int id = static_cast<int>(::syscall(SYS_gettid));
  return id;
}

}  // namespace

std::size_t flight_recorder_capacity() {
  const std::size_t entries = env_size("RINGGRAD_FLIGHT_RECORDER_ENTRIES", 2000);
  if (entries > kMaxFlightRecorderEntries)
    throw std::invalid_argument(fmt::format("RINGGRAD_FLIGHT_RECORDER_ENTRIES={} must be from 0 (off) to {}", entries,
                                            kMaxFlightRecorderEntries));
  return entries;
}

FlightRecorder::FlightRecorder(std::string who, int job_rank, std::size_t capacity)
    : who_(std::move(who)), job_rank_(job_rank), capacity_(capacity) {
  ring_.reserve(std::min<std::size_t>(capacity_, 4096));
  Registry& r = Registry::get();
  std::lock_guard lock(r.mutex);
  id_ = r.next_id++;
  r.recorders.insert(this);
  r.start_watcher();
}

FlightRecorder::~FlightRecorder() {
  Registry& r = Registry::get();
  std::lock_guard lock(r.mutex);
  r.recorders.erase(this);
}

// Sequence numbers are queued in order, one each, so entry `seq` sits at seq % capacity until a
// later one overwrites it: no search on the latency path.
FlightRecorder::Entry* FlightRecorder::find(std::uint64_t seq) {
  if (capacity_ == 0 || seq >= recorded_ || recorded_ - seq > capacity_) return nullptr;
  return &ring_[seq % capacity_];
}

void FlightRecorder::queued(std::uint64_t seq, CollKind kind, std::uint64_t bytes, DType dtype, Algo algo,
                            bool and_started) {
  if (capacity_ == 0) return;
  const double now = now_s();
  const int thread = and_started ? this_thread_id() : 0;
  std::lock_guard lock(mutex_);
  const Entry e{seq, kind, bytes, dtype, algo, and_started ? State::kStarted : State::kQueued, now,
                and_started ? now : 0, 0, thread};
  if (ring_.size() < capacity_) ring_.push_back(e);
  else ring_[seq % capacity_] = e;
  recorded_ = seq + 1;
}

void FlightRecorder::started(std::uint64_t seq) {
  const int thread = this_thread_id();
  std::lock_guard lock(mutex_);
  if (Entry* e = find(seq)) e->state = State::kStarted, e->started_s = now_s(), e->thread = thread;
}

void FlightRecorder::ended(std::uint64_t seq, bool ok) {
  std::lock_guard lock(mutex_);
  if (Entry* e = find(seq)) e->state = ok ? State::kCompleted : State::kFailed, e->ended_s = now_s();
}

std::vector<FlightRecorder::Entry> FlightRecorder::entries() const {
  std::lock_guard lock(mutex_);
  std::vector<Entry> out = ring_;
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
  return out;
}

std::uint64_t FlightRecorder::recorded() const {
  std::lock_guard lock(mutex_);
  return recorded_;
}

std::string FlightRecorder::json() const {
  trace::FlightRecord record{job_rank_, who_, {}};
  for (const Entry& e : entries())
    record.entries.push_back({e.seq, std::string(coll_name(e.kind)), e.bytes, std::string(dtype_name(e.dtype)),
                              std::string(algo_name(e.algo)), e.state, e.queued_s, e.started_s, e.ended_s});
  return trace::to_json(record);
}

std::string FlightRecorder::dump() const {
  const char* dir = std::getenv("RINGGRAD_FLIGHT_RECORDER_DIR");
  if (dir == nullptr || *dir == '\0' || capacity_ == 0) return "";
  const std::string path = fmt::format("{}/rank{}-{}.json", dir, job_rank_, id_);
  std::ofstream(path) << json();
  return path;
}

}  // namespace ringgrad::collectives
