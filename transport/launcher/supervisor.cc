// Supervisor: one poll() loop over the children's output pipes and a signalfd (SIGCHLD for
// exits, SIGINT/SIGTERM/SIGHUP for the user), so there is no thread and no signal-handler race.
// When a rank fails, the others are first asked for their flight records (SIGCONT, then
// SIGUSR1 to those that catch it) and given a second to write them into the job's directory,
// then stopped; the desync report is printed from what they wrote. Starting a rank is
// rank_process.h; passing its output on, rank_output.h.
#include "transport/launcher/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "transport/launcher/desync_report.h"
#include "transport/launcher/rank_output.h"
#include "transport/launcher/rank_process.h"
#include "transport/launcher/repeated_lines.h"
#include "transport/shared_memory.h"

namespace ringgrad::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// A rank: its process and its two output streams (stdout, stderr).
struct Child {
  RankSpec spec;
  pid_t pid = -1;
  bool exited = false;
  int status = 0;
  RankOutput streams[2];
};

// How long the surviving ranks get to write their flight records before SIGTERM.
constexpr auto kDumpWindow = std::chrono::seconds(1);

}  // namespace

int supervise(const std::vector<std::string>& command, const std::vector<RankSpec>& ranks, std::chrono::milliseconds grace) {
  // Signals become readable events on a signalfd; the children get the old mask back.
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, s);
  ::sigprocmask(SIG_BLOCK, &mask, &old_mask);
  int signals = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signals < 0) throw_errno("signalfd");

  // The job's flight records go here (collectives/flight_recorder.h), one file per communicator,
  // in $TMPDIR or /tmp.
  const char* tmp = std::getenv("TMPDIR");
  std::string dumps_template = fmt::format("{}/ringgrad-flight-XXXXXX", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  const std::string dumps_dir = ::mkdtemp(dumps_template.data()) != nullptr ? dumps_template : "";
  std::vector<Child> children(ranks.size());
  RepeatedLines repeats;
  try {
    for (size_t i = 0; i < ranks.size(); ++i) {
      Child& c = children[i];
      c.spec = ranks[i];
      if (!dumps_dir.empty()) c.spec.env.push_back("RINGGRAD_FLIGHT_RECORDER_DIR=" + dumps_dir);
      int pipes[2][2];
      for (auto& p : pipes)
        if (::pipe2(p, O_CLOEXEC) != 0) throw_errno("pipe");
      c.pid = spawn(command, c.spec, pipes[0][1], pipes[1][1], old_mask);
      for (int s = 0; s < 2; ++s) {
        ::close(pipes[s][1]);
        ::fcntl(pipes[s][0], F_SETFL, O_NONBLOCK);
        c.streams[s] = {pipes[s][0], s + 1, {}, s == 1 ? &repeats : nullptr};
      }
    }
  } catch (const std::exception&) {
    // A rank that could not be started (no file descriptors or processes left): the ranks
    // started before it are ended and reaped now (not left to their parent-death signal), and
    // the folder for flight records goes with them, once their pipes are closed (removing a
    // folder takes a file descriptor too).
    for (Child& c : children) {
      for (RankOutput& stream : c.streams)
        if (stream.fd >= 0) ::close(std::exchange(stream.fd, -1));
      if (c.pid <= 0) continue;
      ::kill(-c.pid, SIGKILL);
      ::waitpid(c.pid, nullptr, 0);
    }
    std::error_code ec;
    if (!dumps_dir.empty()) std::filesystem::remove_all(dumps_dir, ec);
    throw;
  }

  int exit_code = 0;
  std::map<int, std::string> fates;  // what the launcher saw of ranks, for the desync report
  bool stopping = false, termed = false, killed = false;
  Clock::time_point term_at{}, kill_at{};
  auto stop_all = [&](int signal) {
    for (Child& c : children)
      if (!c.exited) ::kill(-c.pid, signal);
  };
  auto send_term = [&] {
    stop_all(SIGTERM);
    termed = true;
    kill_at = Clock::now() + grace;
  };
  // A failed rank: first the others' flight records (a stopped rank is continued to write its
  // own), then SIGTERM. An interrupt from the user stops at once.
  auto begin_stop = [&](const std::string& why, int code, bool failure) {
    if (stopping) return;
    stopping = true;
    exit_code = code;
    const bool others = std::any_of(children.begin(), children.end(), [](const Child& c) { return !c.exited; });
    if (others)
      write_all(2, fmt::format("ringgrad-run: {}; stopping the {}ranks (SIGTERM, SIGKILL after {} s)\n", why,
                               failure ? "other " : "", std::chrono::duration<double>(grace).count()));
    else
      write_all(2, fmt::format("ringgrad-run: {}\n", why));
    bool asked = false;
    for (Child& c : children) {
      if (c.exited || !failure || dumps_dir.empty()) continue;
      if (is_stopped(c.pid)) fates[c.spec.rank] = "was stopped (SIGSTOP)";
      ::kill(-c.pid, SIGCONT);
      if (catches_sigusr1(c.pid)) asked = ::kill(c.pid, SIGUSR1) == 0 || asked;
    }
    if (asked) term_at = Clock::now() + kDumpWindow;
    else send_term();
  };

  for (;;) {
    std::vector<pollfd> fds{{signals, POLLIN, 0}};
    std::vector<std::pair<Child*, int>> owners{{nullptr, 0}};
    bool running = false;
    for (Child& c : children) {
      running |= !c.exited;
      for (int s = 0; s < 2; ++s)
        if (c.streams[s].fd >= 0) {
          fds.push_back({c.streams[s].fd, POLLIN, 0});
          owners.emplace_back(&c, s);
        }
    }
    // Once every rank has exited, what is left in the pipes is read, but not waited for: a
    // process a rank left behind may hold a pipe open.
    if (!running) break;
    int timeout_ms = -1;
    if (stopping && running && !killed) {
      const auto until = termed ? kill_at : term_at;
      timeout_ms = static_cast<int>(std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count()));
    }
    ::poll(fds.data(), fds.size(), timeout_ms);
    if (stopping && running && !termed && Clock::now() >= term_at) send_term();
    if (stopping && running && termed && !killed && Clock::now() >= kill_at) {
      stop_all(SIGKILL);
      killed = true;
    }
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents != 0) pump(owners[i].first->streams[owners[i].second], owners[i].first->spec.rank);
    signalfd_siginfo info;
    while (::read(signals, &info, sizeof info) == sizeof info) {
      if (info.ssi_signo != SIGCHLD && stopping && !killed) {
        // A second Ctrl-C (or SIGTERM/SIGHUP) while the ranks are given their grace: stop now.
        write_all(2, fmt::format("ringgrad-run: received signal {} (SIG{}) while stopping; killing the ranks now (SIGKILL)\n",
                                 info.ssi_signo, ::sigabbrev_np(static_cast<int>(info.ssi_signo))));
        stop_all(SIGKILL);
        killed = true;
        continue;
      }
      if (info.ssi_signo != SIGCHLD) {  // no rank failed: the user (or the system) stops the job
        const int signo = static_cast<int>(info.ssi_signo);
        begin_stop(signo == SIGINT ? "interrupted by the user (SIGINT)"
                                   : fmt::format("received signal {} (SIG{})", signo, ::sigabbrev_np(signo)),
                   128 + signo, false);
        continue;
      }
      for (Child& c : children) {
        if (c.exited || ::waitpid(c.pid, &c.status, WNOHANG) != c.pid) continue;
        c.exited = true;
        if (!failed(c.status)) continue;
        std::string what = fmt::format("rank {} (pid {}) {}", c.spec.rank, c.pid, describe_status(c.status));
        if (stopping) write_all(2, fmt::format("ringgrad-run: while stopping: {}\n", what));
        else {
          if (WIFSIGNALED(c.status)) fates[c.spec.rank] = describe_status(c.status);  // died: it may have no record
          begin_stop(what, WIFSIGNALED(c.status) ? 128 + WTERMSIG(c.status) : WEXITSTATUS(c.status), true);
        }
      }
    }
  }
  for (Child& c : children) {
    for (RankOutput& s : c.streams) drain(s, c.spec.rank);
    // A rank killed while it set up shared memory (between creating its segment and unlinking
    // it, collectives/links/shm_peers.cc) leaves the segment in /dev/shm: remove it.
    transport::remove_segments_of(c.pid);
  }
  if (const std::string held = repeats.summary(); !held.empty()) write_all(2, fmt::format("ringgrad-run: {}\n", held));
  ::close(signals);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (!dumps_dir.empty()) {
    if (exit_code != 0)
      if (const std::string report = desync_report(read_dumps(dumps_dir), fates); !report.empty())
        write_all(2, fmt::format("ringgrad-run: flight records: {}\n", report));
    std::error_code ec;
    std::filesystem::remove_all(dumps_dir, ec);
  }
  return exit_code;
}

}  // namespace ringgrad::launcher
