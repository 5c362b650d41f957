// Starting a rank (fork, then exec with its environment, CPUs and pipes) and reading its state.
#include "transport/launcher/rank_process.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "transport/launcher/rank_output.h"

extern char** environ;

namespace ringgrad::launcher {

[[noreturn]] void throw_errno(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

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

bool is_stopped(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("State:")) {
      const auto at = line.find_first_not_of(" \t", 6);
      return at != std::string::npos && (line[at] == 'T' || line[at] == 't');
    }
  return false;
}

bool catches_sigusr1(pid_t pid) {
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("SigCgt:")) return (std::stoull(line.substr(7), nullptr, 16) >> (SIGUSR1 - 1)) & 1;
  return false;
}

}  // namespace ringgrad::launcher
