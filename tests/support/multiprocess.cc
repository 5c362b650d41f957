// run_ranks: fork one child per rank, pass each child's failure message back through a pipe,
// reap them all (killing stragglers at the deadline).

#include "tests/support/multiprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "transport/config.h"
#include "transport/cpus.h"
#include "transport/job_token.h"

namespace ringgrad::test {
namespace {

[[noreturn]] void throw_errno(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0 && errno != EINTR) return;
    if (n > 0) done += static_cast<size_t>(n);
  }
}

[[noreturn]] void run_child(int rank, int world_size, uint16_t port, const std::string& job_id,
                            const std::string& job_token, const std::function<void(const transport::Config&)>& fn,
                            const RunOptions& options, int message_fd) {
  // The default actions again for the signals Catch2 v2 handles: with the parent's handlers, a
  // signal to this rank (an outer timeout's SIGTERM, say) printed the parent's test case and
  // run summary from here.
  for (int sig : {SIGINT, SIGILL, SIGFPE, SIGSEGV, SIGTERM, SIGABRT}) ::signal(sig, SIG_DFL);
  std::string message;
  try {
    if (options.setup) options.setup(rank);
    transport::Config config;
    config.rank = rank;
    config.world_size = world_size;
    config.master_addr = options.master_addr;
    config.master_port = port;
    config.job_id = job_id;
    config.job_token = job_token;
    config.timeout = options.timeout;
    // Small receives poll as under ringgrad-run, so the tests run the path jobs take.
    const auto cpus = static_cast<int>(transport::allowed_cpus().size());
    config.receive_poll = transport::receive_poll_default(world_size, cpus);
    fn(config);
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "a non-std exception (a Catch2 REQUIRE inside a rank? use ringgrad::test::check)";
  }
  write_all(message_fd, message);
  std::fflush(nullptr);
  _exit(message.empty() ? 0 : 1);  // skip the parent's atexit handlers (Catch2's reporter)
}

}  // namespace

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

uint16_t pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw_errno("bind to an ephemeral port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::vector<RankResult> run_ranks(int world_size, const std::function<void(const transport::Config&)>& fn,
                                  const RunOptions& options) {
  const uint16_t port = pick_free_port();
  const std::string job_id = fmt::format("test-{}-{}", ::getpid(), port);
  const std::string job_token = transport::new_job_token();
  std::fflush(nullptr);  // or the children would flush the parent's buffered output again

  struct Child {
    pid_t pid = -1;
    int message_fd = -1;
  };
  std::vector<Child> children(static_cast<size_t>(world_size));
  for (int rank = 0; rank < world_size; ++rank) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe");
    pid_t pid = ::fork();
    if (pid < 0) throw_errno("fork");
    if (pid == 0) {
      ::close(fds[0]);
      run_child(rank, world_size, port, job_id, job_token, fn, options, fds[1]);
    }
    ::close(fds[1]);
    children[static_cast<size_t>(rank)] = {pid, fds[0]};
  }

  std::vector<RankResult> results(static_cast<size_t>(world_size));
  const auto deadline = std::chrono::steady_clock::now() + options.deadline;
  bool killed = false;
  for (int rank = 0; rank < world_size; ++rank) {
    Child& child = children[static_cast<size_t>(rank)];
    RankResult& result = results[static_cast<size_t>(rank)];
    result.rank = rank;
    // Read the message until the child closes its end (it exits), or kill all at the deadline.
    char buffer[4096];
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{child.message_fd, POLLIN, 0};
      int ready = killed ? 1 : ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      if (ready == 0) {
        for (const Child& c : children) ::kill(c.pid, SIGKILL);
        killed = true;
        result.message = "still running at the test deadline; killed";
      }
      ssize_t n = ::read(child.message_fd, buffer, sizeof buffer);
      if (n > 0) result.message.append(buffer, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR) break;
    }
    ::close(child.message_fd);
    int status = 0;
    while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  }
  return results;
}

std::string describe(const std::vector<RankResult>& results) {
  std::string text;
  for (const RankResult& r : results) {
    text += fmt::format("[rank {}: ", r.rank);
    if (r.signal != 0) text += fmt::format("killed by signal {}", r.signal);
    else text += fmt::format("exit {}", r.exit_code);
    if (!r.message.empty()) text += ": " + r.message;
    text += "] ";
  }
  return text;
}

}  // namespace ringgrad::test
