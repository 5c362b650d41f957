// ringgrad-run: starts the ranks of a job on this node with torchrun's flags and environment
// (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, RINGGRAD_JOB_ID,
// and the job's secret, RINGGRAD_JOB_TOKEN).
//   ringgrad-run --nproc-per-node 4 build/bin/train_mlp --epochs 1
//   RINGGRAD_JOB_TOKEN=<one secret for every node> ringgrad-run --nnodes 2 --node-rank 0
//       --nproc-per-node 8 --master-addr 10.0.0.1 --master-port 29500 -- prog args
// A job of one node meets on loopback: its ranks listen on no other address.
// --cpu-bind cores binds each local rank to its own share of the CPUs, as mpirun does.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/numbers.h"
#include "cli/parse.h"
#include "cli/suggest.h"
#include "transport/cpus.h"
#include "transport/job_token.h"
#include "transport/launcher/supervisor.h"
#include "transport/net.h"

namespace {

// A port that was free a moment ago on every interface (the kernel's ephemeral choice). Rank 0
// binds it again a moment later; the window for a race is the same as torchrun's.
uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("cannot find a free port; pass --master-port");
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ringgrad-run: start the ranks of a ringgrad job on this node (torchrun's flags)"};
  int nproc_per_node = 1, nnodes = 1, node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  double grace_s = 5;
  int max_restarts = 0;
  std::string cpu_bind = "none";
  std::vector<std::string> command;
  app.add_option("--nproc-per-node,--nproc_per_node", nproc_per_node, "ranks on this node")->check(ringgrad::cli::between(1, 4096));
  app.add_option("--nnodes", nnodes, "nodes in the job")->check(ringgrad::cli::between(1, 65536));
  app.add_option("--node-rank,--node_rank", node_rank, "this node's index in [0, nnodes)")->check(ringgrad::cli::between(0, 65535));
  app.add_option("--master-addr,--master_addr", master_addr,
                 "address of node 0, where rank 0 serves the rendezvous store (a loopback one with --nnodes 1)");
  app.add_option("--master-port,--master_port", master_port, "port of the store; 0 = a free one (single node only)")
      ->check(ringgrad::cli::between(0, 65535));
  app.add_option("--cpu-bind,--cpu_bind", cpu_bind,
                 "none (default): the kernel places the ranks; cores: local rank i runs on the i-th of nproc runs of "
                 "consecutive CPUs among those this launcher may use (2 ranks, 2 CPUs: one each; 3 ranks, 4 CPUs: 1, 1, "
                 "2), when there are at least as many CPUs as ranks, else nothing is bound (and a note says so)")
      ->check(CLI::IsMember({"cores", "none"}));
  app.add_option("--grace", grace_s, "seconds between SIGTERM and SIGKILL when stopping the ranks (at most a day)");
  app.add_option("--max-restarts,--max_restarts", max_restarts,
                 "when a rank fails, stop all and start all again (a fresh rendezvous), at most this many times; "
                 "each start sees RINGGRAD_RESTART_COUNT (torchrun's TORCHELASTIC_RESTART_COUNT too); a rank's exit "
                 "status 2 (a usage error) is not retried")
      ->check(ringgrad::cli::between(0, 1000));
  app.prefix_command();  // the first positional argument is the program: it and all after it are its own
  app.footer("After the options: the program and its arguments (an optional -- may separate them).");
  if (const auto status = ringgrad::cli::parse(app, argc, argv)) return *status;
  command = app.remaining();
  const bool separated = !command.empty() && command.front() == "--";
  if (separated) command.erase(command.begin());

  try {
    if (command.empty()) throw std::runtime_error("no program to run");
    // CLI11 ends the options at the first argument it does not know: a mistyped option would
    // be started as the program on every rank.
    if (!separated && command.front().starts_with("-")) {
      const std::string meant = ringgrad::cli::closest_flag(app, command.front());
      throw std::runtime_error(fmt::format("unknown option {} (the program follows the options; put -- before a "
                                           "program whose name begins with -){}", command.front(),
                                           meant.empty() ? "" : fmt::format("; did you mean {}?", meant)));
    }
    if (master_addr.empty()) throw std::runtime_error("--master-addr is empty: give node 0's address");
    // Checked here, not by CLI11's Range: a NaN passes every comparison, and a huge value
    // overflowed the milliseconds into a negative grace (SIGKILL at once).
    if (!(grace_s >= 0 && grace_s <= 86400)) throw std::runtime_error(fmt::format("--grace {} is not in [0, 86400] seconds", grace_s));
    if (node_rank >= nnodes) throw std::runtime_error(fmt::format("--node-rank {} is not in [0, --nnodes {})", node_rank, nnodes));
    if (master_port == 0 && nnodes > 1)
      throw std::runtime_error("--master-port is required with --nnodes > 1 (every node must name the same port)");
    // One node: the ranks meet on loopback, so the job listens on no address another host reaches.
    if (nnodes == 1 && !ringgrad::transport::net::is_loopback(master_addr))
      throw std::runtime_error(fmt::format("--master-addr {} with --nnodes 1: the ranks of one node meet on loopback "
                                           "(the default 127.0.0.1); another address is for a job of several nodes",
                                           master_addr));
    // The job token keeps strangers out of the store and the mesh (transport/job_token.h). The
    // nodes of a job must carry the same one, which no launcher can draw for the others: it
    // comes from the environment.
    const char* token_env = std::getenv("RINGGRAD_JOB_TOKEN");
    const std::string user_token = token_env != nullptr ? token_env : "";
    if (user_token.empty() && nnodes > 1)
      throw std::runtime_error("--nnodes > 1 needs RINGGRAD_JOB_TOKEN, one secret set alike on every node, e.g. "
                               "export RINGGRAD_JOB_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')");
    if (max_restarts > 0 && nnodes > 1)
      throw std::runtime_error("--max-restarts restarts the ranks of one node; across nodes the launchers would have to "
                               "agree on each restart, which is not built");
    const bool pick_port = master_port == 0;

    // Every rank of a job, on every node, must carry the same job id: take it from the
    // environment, else derive it from the rendezvous address (multi-node) or draw one.
    const char* job_env = std::getenv("RINGGRAD_JOB_ID");
    auto job_id_for = [&](int restart) -> std::string {
      if (job_env != nullptr && *job_env != '\0') return restart == 0 ? job_env : fmt::format("{}-restart{}", job_env, restart);
      if (nnodes > 1) return fmt::format("ringgrad-{}:{}", master_addr, master_port);
      return fmt::format("ringgrad-{:016x}", std::random_device{}() * 0x100000001ull ^ static_cast<uint64_t>(::getpid()));
    };

    // Binding each rank to CPUs of its own (as mpirun does) keeps the kernel from moving ranks
    // between CPUs, and keeps a rank's communication thread on its own rank's CPUs instead of
    // the other ranks'. Rank i takes the i-th of nproc equal runs of the CPUs, so that its BLAS
    // threads have CPUs too. With more ranks than CPUs nothing is bound. Off by default, as with
    // torchrun: two jobs started on one machine would both bind to the same first CPUs.
    const std::vector<int> cpus = cpu_bind == "cores" ? ringgrad::transport::allowed_cpus() : std::vector<int>{};
    const auto n_cpus = static_cast<int>(cpus.size());
    const bool bind = cpu_bind == "cores" && nproc_per_node <= n_cpus;
    if (cpu_bind == "cores" && !bind)
      fmt::print(stderr, "ringgrad-run: --cpu-bind cores: {} ranks but {} CPUs, so no rank is bound\n", nproc_per_node,
                 n_cpus);
    const auto share = [&](int local) {
      if (!bind) return std::vector<int>{};
      return std::vector<int>(cpus.begin() + local * n_cpus / nproc_per_node,
                              cpus.begin() + (local + 1) * n_cpus / nproc_per_node);
    };
    const int world_size = nnodes * nproc_per_node;
    auto grace = std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000));
    // Each start is a fresh job: a new rendezvous port (when this launcher picks it), job id
    // and token (when this launcher draws it), so no rank of the failed start can join the next.
    for (int restart = 0;; ++restart) {
      const int port = pick_port ? free_port() : master_port;
      const std::string job_id = job_id_for(restart);
      const std::string token = user_token.empty() ? ringgrad::transport::new_job_token() : user_token;
      std::vector<ringgrad::launcher::RankSpec> ranks;
      for (int local = 0; local < nproc_per_node; ++local) {
        const int rank = node_rank * nproc_per_node + local;
        ranks.push_back({rank,
                         {fmt::format("RANK={}", rank), fmt::format("LOCAL_RANK={}", local), fmt::format("WORLD_SIZE={}", world_size),
                          fmt::format("LOCAL_WORLD_SIZE={}", nproc_per_node), fmt::format("GROUP_RANK={}", node_rank),
                          fmt::format("MASTER_ADDR={}", master_addr), fmt::format("MASTER_PORT={}", port),
                          fmt::format("RINGGRAD_JOB_ID={}", job_id), fmt::format("RINGGRAD_JOB_TOKEN={}", token),
                          fmt::format("RINGGRAD_RESTART_COUNT={}", restart),
                          fmt::format("TORCHELASTIC_RESTART_COUNT={}", restart)},
                         share(local)});
      }
      const auto started = std::chrono::steady_clock::now();
      const int code = ringgrad::launcher::supervise(command, ranks, grace);
      // Done: success, an interrupt (the user's Ctrl-C is not a failure to retry), or no restarts left.
      if (code == 2 && restart < max_restarts)  // the programs' usage errors: a restart would repeat them
        fmt::print(stderr, "ringgrad-run: a rank exited with 2, a usage error, which a restart would repeat: not restarting\n");
      if (code == 0 || code == 130 || code == 2 || restart >= max_restarts) {
        if (code != 0 && max_restarts > 0 && code != 130 && code != 2)
          fmt::print(stderr, "ringgrad-run: giving up after {} restart{}\n", restart, restart == 1 ? "" : "s");
        return code;
      }
      fmt::print(stderr, "ringgrad-run: start {} failed (exit {}) after {:.1f} s; restarting all ranks ({} of {})\n",
                 restart + 1, code, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                 restart + 1, max_restarts);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "ringgrad-run: {}\n", e.what());
    return 2;
  }
}
