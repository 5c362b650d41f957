// Supervisor: one poll() loop over the children's output pipes and a signalfd (SIGCHLD for
// exits, SIGINT/SIGTERM/SIGHUP for the user), so there is no thread and no signal-handler race.
// When a rank fails, the others are first asked for their flight records (SIGCONT, then
// SIGUSR1 to those that catch it) and given a second to write them into the job's directory,
// then stopped; the desync report is printed from what they wrote.

#include "transport/shared_memory.h"
#include "transport/launcher/supervisor.h"
#include "transport/launcher/desync_report.h"
#include "transport/launcher/repeated_lines.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>

extern char** environ;

namespace ringgrad::launcher {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void throw_errno(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

// One output stream of one rank: bytes are passed on line by line with the rank's prefix.
struct Stream {
  int fd = -1;      // read end of the pipe; -1 once closed
  int out = 1;      // where its lines go: 1 (stdout) or 2 (stderr)
  std::string partial;
  RepeatedLines* repeats = nullptr;  // stderr: lines another rank showed are held back
};

// The line with the rank's prefix, or nothing when it repeats another rank's stderr line.
std::string prefixed(const Stream& s, int rank, std::string_view line) {
  if (s.repeats != nullptr && !s.repeats->show(line, rank)) return "";
  return fmt::format("[rank {}] {}\n", rank, line);
}

struct Child {
  RankSpec spec;
  pid_t pid = -1;
  bool exited = false;
  int status = 0;
  Stream streams[2];
};

void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// Longest piece of a rank's output held back waiting for its newline, in bytes.
constexpr size_t kMaxLine = 64 << 10;

// Reads what is there (the pipe is non-blocking) and writes each complete line with the
// prefix. Returns whether it read anything; closes the stream at EOF.
bool pump(Stream& s, int rank) {
  char buffer[65536];
  ssize_t n = ::read(s.fd, buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return false;
  if (n > 0) s.partial.append(buffer, static_cast<size_t>(n));
  std::string lines;
  size_t start = 0;
  for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1)
    lines += prefixed(s, rank, std::string_view(s.partial).substr(start, nl - start));
  s.partial.erase(0, start);
  // At EOF the last piece goes out as a line; so does a piece that reaches kMaxLine, so a rank
  // that never ends its line (a progress bar redrawn with '\r') cannot grow this buffer forever.
  if ((n <= 0 || s.partial.size() >= kMaxLine) && !s.partial.empty()) {
    lines += prefixed(s, rank, std::exchange(s.partial, {}));
  }
  write_all(s.out, lines);
  if (n > 0) return true;
  ::close(s.fd);
  s.fd = -1;
  return false;
}

// Reads what is left without waiting; a last line without a newline is passed on too.
void drain(Stream& s, int rank) {
  while (s.fd >= 0 && pump(s, rank)) {
  }
  if (s.fd < 0) return;  // EOF: pump flushed and closed it
  if (!s.partial.empty()) write_all(s.out, prefixed(s, rank, std::exchange(s.partial, {})));
  ::close(s.fd);
  s.fd = -1;
}

pid_t spawn(const std::vector<std::string>& command, const RankSpec& spec, int out_fd, int err_fd, const sigset_t& old_mask) {
  // The rank's variables replace any of the same name the launcher inherited (a RANK or
  // MASTER_PORT left in the shell, or ringgrad-run started from inside another job): with both
  // in the environment, getenv would return the inherited one, the first.
  const auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const bool replaced = std::any_of(spec.env.begin(), spec.env.end(),
                                      [&](const std::string& own) { return name_of(own) == name_of(*e); });
    if (!replaced) env_strings.emplace_back(*e);
  }
  env_strings.insert(env_strings.end(), spec.env.begin(), spec.env.end());
  std::vector<char*> argv, envp;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  for (const auto& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const pid_t launcher = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork");
  if (pid == 0) {
    ::setpgid(0, 0);  // its own process group: stopping a rank stops what it started too
    // A launcher killed outright (SIGKILL, OOM) cannot stop its ranks: the kernel does, rather
    // than leave them running under init. The check closes the window before prctl.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != launcher) _exit(128 + SIGKILL);
    if (!spec.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int cpu : spec.cpus) CPU_SET(cpu, &set);
      ::sched_setaffinity(0, sizeof set, &set);  // CPUs the launcher may run on: cannot fail
    }
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    std::string message = fmt::format("ringgrad-run: cannot run '{}': {}\n", command[0], std::strerror(errno));
    write_all(2, message);
    _exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that no kill(-pid) can come before the child's own call
  return pid;
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const char* name = ::sigabbrev_np(WTERMSIG(status));
    return fmt::format("was killed by signal {} (SIG{})", WTERMSIG(status), name != nullptr ? name : "?");
  }
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}

bool failed(int status) { return !(WIFEXITED(status) && WEXITSTATUS(status) == 0); }

// Whether process `pid` is stopped (SIGSTOP, a debugger): /proc's State "T" or "t".
bool is_stopped(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("State:")) {
      const auto at = line.find_first_not_of(" \t", 6);
      return at != std::string::npos && (line[at] == 'T' || line[at] == 't');
    }
  return false;
}

// Whether process `pid` catches SIGUSR1 (/proc's SigCgt mask): sending it to one that does not
// would end it by the default action.
bool catches_sigusr1(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("SigCgt:")) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGUSR1 - 1)) & 1;
  return false;
}

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
      for (Stream& stream : c.streams)
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
      write_all(2, fmt::format("ringgrad-run: {}; stopping the other ranks (SIGTERM, SIGKILL after {} s)\n", why,
                               std::chrono::duration<double>(grace).count()));
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
      if (info.ssi_signo != SIGCHLD) {
        begin_stop(fmt::format("received signal {} (SIG{})", info.ssi_signo, ::sigabbrev_np(static_cast<int>(info.ssi_signo))),
                   128 + static_cast<int>(info.ssi_signo), false);
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
    for (Stream& s : c.streams) drain(s, c.spec.rank);
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
