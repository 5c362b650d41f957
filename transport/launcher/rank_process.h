// A rank as a child process: started with its environment and CPUs, in a process group of its
// own, and what waitpid and /proc say of it.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "transport/launcher/supervisor.h"

namespace ringgrad::launcher {

/// Throws std::system_error for errno, saying `what` failed.
[[noreturn]] void throw_errno(const std::string& what);

/// Starts `command` as rank `spec`: the launcher's environment with spec.env replacing variables
/// of the same name, on spec.cpus, stdout and stderr on `out_fd` and `err_fd`, signal mask
/// `old_mask`, in its own process group, and killed (SIGKILL) when the launcher dies. Returns its
/// pid. Throws std::system_error when fork fails; a command that cannot be run says so on its
/// stderr and exits 127.
pid_t spawn(const std::vector<std::string>& command, const RankSpec& spec, int out_fd, int err_fd, const sigset_t& old_mask);

/// "exited with code 3", "was killed by signal 9 (SIGKILL)": a waitpid status in words.
std::string describe_status(int status);
/// Whether a waitpid status is anything but exit code 0.
bool failed(int status);
/// Whether process `pid` is stopped (SIGSTOP, a debugger): /proc's State "T" or "t".
bool is_stopped(pid_t pid);
/// Whether process `pid` catches SIGUSR1 (/proc's SigCgt mask): sending it to one that does not
/// would end it by the default action.
bool catches_sigusr1(pid_t pid);

}  // namespace ringgrad::launcher
