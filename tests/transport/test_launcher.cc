// ringgrad-run: the environment it gives each rank (a fresh job token included), the [rank N]
// prefix on every line, an error line all ranks print shown once, stopping all ranks when one
// fails or on Ctrl-C, binding ranks to CPUs, and a real ringgrad job started with it: on
// loopback only, and carrying on, with the same result, while a stranger knocks.

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "transport/cpus.h"

namespace {

struct Outcome {
  int exit_code;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs a shell command line, capturing stdout and stderr.
Outcome sh(const std::string& command) {
  const std::string base = fmt::format("/tmp/ringgrad-launcher-test-{}", ::getpid());
  int status = std::system(fmt::format("{} >{}.out 2>{}.err", command, base, base).c_str());
  Outcome o{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(base + ".out"), slurp(base + ".err")};
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return o;
}

const std::string run = RINGGRAD_RUN;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("ringgrad-run gives each rank torchrun's environment and prefixes its lines") {
  Outcome o = sh("env -u RINGGRAD_JOB_TOKEN " + run + " --nproc-per-node 3 -- sh -c 'echo $RANK $LOCAL_RANK $WORLD_SIZE "
                 "$LOCAL_WORLD_SIZE $MASTER_ADDR ${MASTER_PORT:+port} ${RINGGRAD_JOB_ID:+job} token=$RINGGRAD_JOB_TOKEN; "
                 "echo to stderr from $RANK >&2; printf no-newline'");
  INFO(o.out << o.err);
  REQUIRE(o.exit_code == 0);
  for (int r = 0; r < 3; ++r) {
    CHECK(contains(o.out, fmt::format("[rank {}] {} {} 3 3 127.0.0.1 port job token=", r, r, r)));
    CHECK(contains(o.out, fmt::format("[rank {}] no-newline\n", r)));
    CHECK(contains(o.err, fmt::format("[rank {}] to stderr from {}\n", r, r)));
  }
  // One token for the job, 128 bits drawn afresh: 32 hex digits, alike on every rank.
  std::set<std::string> tokens;
  const std::regex token_line(R"( token=([0-9a-f]*)\n)");
  for (auto m = std::sregex_iterator(o.out.begin(), o.out.end(), token_line); m != std::sregex_iterator(); ++m)
    tokens.insert((*m)[1]);
  REQUIRE(tokens.size() == 1);
  CHECK(tokens.begin()->size() == 32);
  CHECK(!contains(sh("env -u RINGGRAD_JOB_TOKEN " + run + " sh -c 'echo $RINGGRAD_JOB_TOKEN'").out, *tokens.begin()));
  // Several nodes: the token comes from the environment, alike on every node; without one the
  // launcher refuses.
  o = sh("RINGGRAD_JOB_TOKEN=s3cret " + run + " --nnodes 2 --node-rank 1 --nproc-per-node 2 --master-addr 10.9.8.7 "
         "--master-port 1234 sh -c 'echo $RANK $LOCAL_RANK $WORLD_SIZE $MASTER_ADDR $MASTER_PORT $RINGGRAD_JOB_ID "
         "$RINGGRAD_JOB_TOKEN'");
  CHECK(contains(o.out, "[rank 2] 2 0 4 10.9.8.7 1234 ringgrad-10.9.8.7:1234 s3cret\n"));
  CHECK(contains(o.out, "[rank 3] 3 1 4 10.9.8.7 1234 ringgrad-10.9.8.7:1234 s3cret\n"));
  o = sh("env -u RINGGRAD_JOB_TOKEN " + run + " --nnodes 2 --master-addr 10.9.8.7 --master-port 1234 true");
  CHECK(o.exit_code == 2);
  CHECK(contains(o.err, "--nnodes > 1 needs RINGGRAD_JOB_TOKEN"));
  CHECK(sh(run + " --nnodes 2 --nproc-per-node 2 true").exit_code == 2);  // no --master-port
  // One node meets on loopback.
  o = sh(run + " --master-addr 10.9.8.7 true");
  CHECK(o.exit_code == 2);
  CHECK(contains(o.err, "--master-addr 10.9.8.7 with --nnodes 1: the ranks of one node meet on loopback"));
  // A mistyped option is not started as the program; after -- a program may begin with -.
  o = sh(run + " --nproc-per-nodes 2 true");
  CHECK(o.exit_code == 2);
  CHECK(contains(o.err, "ringgrad-run: unknown option --nproc-per-nodes (the program follows the options"));
  CHECK(contains(o.err, "did you mean --nproc-per-node?"));
  CHECK(sh(run + " -- -true-").exit_code == 127);  // a program named -true- is looked for
  o = sh(run + " --master-addr '' true");
  CHECK(o.exit_code == 2);
  CHECK(contains(o.err, "--master-addr is empty"));
  // A grace that is not a number of seconds in range is refused, not turned into SIGKILL at once.
  for (const char* grace : {"1e20", "nan", "-1"}) {
    o = sh(run + " --grace " + grace + " true");
    INFO(grace << ": " << o.err);
    CHECK(o.exit_code != 0);
    CHECK(contains(o.err, "--grace"));
  }
}

TEST_CASE("ringgrad-run passes on a line without end in pieces instead of holding it all") {
  // 300,000 bytes and no newline: at most 64 KiB is held back at a time.
  Outcome o = sh(run + " --nproc-per-node 1 -- sh -c 'head -c 300000 /dev/zero | tr \"\\\\0\" x'");
  REQUIRE(o.exit_code == 0);
  std::size_t xs = 0, lines = 0, longest = 0;
  std::istringstream text(o.out);
  for (std::string line; std::getline(text, line); ++lines) {
    CHECK(line.rfind("[rank 0] ", 0) == 0);
    xs += static_cast<std::size_t>(std::count(line.begin(), line.end(), 'x'));
    longest = std::max(longest, line.size());
  }
  CHECK(xs == 300000);
  CHECK(lines >= 3);  // 300,000 bytes in pieces of 64-128 KiB
  CHECK(longest <= (64u << 10) + 65536 + 9);  // the held piece plus at most one read
}

TEST_CASE("ringgrad-run shows a stderr line every rank prints alike once, and says so") {
  // Each of 3 ranks prints the same error (after a pause, so the ranks' lines interleave), its
  // own line, and the same error again; stdout is passed on untouched.
  Outcome o = sh(run + " --nproc-per-node 3 -- sh -c 'sleep 0.$RANK; echo batch 7 does not divide >&2; "
                       "echo mine $RANK >&2; echo batch 7 does not divide >&2; echo out'");
  INFO(o.err);
  CHECK(o.exit_code == 0);
  const auto count = [&](const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = o.err.find(part); at != std::string::npos; at = o.err.find(part, at + 1)) ++n;
    return n;
  };
  CHECK(count("] batch 7 does not divide\n") == 2);  // rank 0's, both times: a rank's own repeat is shown
  CHECK(count("[rank 0] batch 7 does not divide\n") == 2);
  for (int r = 0; r < 3; ++r) CHECK(contains(o.err, fmt::format("[rank {}] mine {}\n", r, r)));
  CHECK(contains(o.err, "ringgrad-run: ranks 1, 2 printed 4 stderr lines another rank had printed first; shown once"));
  for (int r = 0; r < 3; ++r) CHECK(contains(o.out, fmt::format("[rank {}] out\n", r)));
}

TEST_CASE("ringgrad-run stops the other ranks when one fails and reports it") {
  // The siblings would sleep for a minute; the launcher must stop them (and what they started).
  Outcome o = sh(run + " --nproc-per-node 4 --grace 1 sh -c 'if [ $RANK = 2 ]; then exit 7; fi; sleep 60'");
  INFO(o.err);
  CHECK(o.exit_code == 7);
  CHECK(contains(o.err, "ringgrad-run: rank 2 (pid"));
  CHECK(contains(o.err, "exited with code 7; stopping the other ranks"));
  o = sh(run + " --nproc-per-node 2 --grace 1 sh -c 'if [ $RANK = 1 ]; then kill -9 $$; fi; sleep 60'");
  INFO(o.err);
  CHECK(o.exit_code == 128 + 9);
  CHECK(contains(o.err, "rank 1 (pid"));
  CHECK(contains(o.err, "was killed by signal 9 (SIGKILL)"));
}

TEST_CASE("ringgrad-run --max-restarts retries a failure, not a usage error, and a lone rank has no others to stop") {
  const std::string starts = fmt::format("/tmp/ringgrad-launcher-starts-{}", ::getpid());
  std::remove(starts.c_str());
  // Exit 3 each time: started 3 times in all (2 restarts), each start reported.
  Outcome o = sh(run + " --nproc-per-node 1 --max-restarts 2 sh -c 'echo x >> " + starts + "; exit 3'");
  INFO(o.err);
  CHECK(o.exit_code == 3);
  std::string lines = slurp(starts);
  CHECK(std::count(lines.begin(), lines.end(), 'x') == 3);
  CHECK(contains(o.err, "restarting all ranks (2 of 2)"));
  CHECK(contains(o.err, "giving up after 2 restarts"));
  CHECK_FALSE(contains(o.err, "stopping the other ranks"));  // one rank: nobody else to stop
  std::remove(starts.c_str());
  // Exit 2, the programs' usage error: started once.
  o = sh(run + " --nproc-per-node 1 --max-restarts 2 sh -c 'echo x >> " + starts + "; exit 2'");
  INFO(o.err);
  CHECK(o.exit_code == 2);
  lines = slurp(starts);
  CHECK(std::count(lines.begin(), lines.end(), 'x') == 1);
  CHECK(contains(o.err, "a usage error, which a restart would repeat: not restarting"));
  std::remove(starts.c_str());
  // A ringgrad program's bad flag is such a usage error (CLI11 alone would exit 100-120).
  o = sh(run + " --nproc-per-node 2 --max-restarts 2 " ALL_REDUCE_PERF " --stepfactor abc");
  INFO(o.err);
  CHECK(o.exit_code == 2);
  CHECK(contains(o.err, "--stepfactor = abc"));
  CHECK(contains(o.err, "not restarting"));
  CHECK_FALSE(contains(o.err, "restarting all ranks"));
}

TEST_CASE("ringgrad-run that cannot start every rank ends the ones it started and leaves no files") {
  // 64 file descriptors hold the pipes of about 15 ranks: a later rank fails to start. The
  // ranks before it must not be left running, nor the job's folder for flight records.
  const std::string tmp = fmt::format("/tmp/ringgrad-launcher-tmp-{}", ::getpid());
  std::filesystem::create_directory(tmp);
  const auto start = std::chrono::steady_clock::now();
  const Outcome o = sh("(ulimit -n 64; TMPDIR=" + tmp + " " + run + " --nproc-per-node 40 sleep 31.25)");
  INFO(o.err);
  CHECK(o.exit_code == 2);
  CHECK(contains(o.err, "ringgrad-run: pipe: Too many open files"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  CHECK(sh("pgrep -f 'slee[p] 31.25'").exit_code == 1);  // none left (the [p] keeps pgrep from matching this shell)
  CHECK(std::filesystem::is_empty(tmp));
  std::filesystem::remove_all(tmp);
}

TEST_CASE("Ctrl-C on ringgrad-run stops every rank") {
  // SIGINT to the launcher alone (as a terminal's Ctrl-C reaches it); the ranks ignore SIGINT,
  // so only the launcher's SIGTERM can end them.
  Outcome o = sh("( " + run + " --nproc-per-node 3 --grace 1 sh -c 'trap \"\" INT; echo up; sleep 60' & pid=$!; "
                 "sleep 1; kill -INT $pid; wait $pid )");
  INFO(o.out << o.err);
  CHECK(o.exit_code == 128 + 2);
  CHECK(contains(o.err, "ringgrad-run: interrupted by the user (SIGINT); stopping the ranks (SIGTERM"));
  CHECK_FALSE(contains(o.err, "stopping the other ranks"));  // no rank failed
  // Ranks that ignore SIGTERM get the grace period; a second Ctrl-C does not wait it out.
  const auto start = std::chrono::steady_clock::now();
  o = sh("( " + run + " --nproc-per-node 2 --grace 30 sh -c 'trap \"\" TERM; exec sleep 60' & pid=$!; "
         "sleep 1; kill -INT $pid; sleep 0.5; kill -INT $pid; wait $pid )");
  INFO(o.out << o.err);
  CHECK(o.exit_code == 128 + 2);
  CHECK(contains(o.err, "while stopping; killing the ranks now"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("ranks started by ringgrad-run join one job and exchange messages") {
  Outcome o = sh(run + " --nproc-per-node 4 " + std::string(LAUNCHER_CHILD));
  INFO(o.out << o.err);
  REQUIRE(o.exit_code == 0);
  for (int r = 0; r < 4; ++r) CHECK(contains(o.out, fmt::format("[rank {}] got {} from rank {}\n", r, (r + 3) % 4 * 1000, (r + 3) % 4)));
}

TEST_CASE("a one-node job listens on loopback only, and a stranger's knocks are refused, logged with their address, "
          "and change nothing") {
  // The last of 3 ranks first plays the stranger (tests/transport/intruder.h): it lists the
  // listening sockets of every rank once the others listen (rank 0's store and the listeners of
  // ranks 0 and 1), then knocks with a wrong token, no token and garbage, and leaves a silent
  // connection open on the store and on rank 0.
  const std::string child = " --nproc-per-node 3 " + std::string(LAUNCHER_CHILD);
  const Outcome plain = sh(run + child);
  const Outcome knocked = sh("RINGGRAD_TEST_INTRUDE=1 " + run + child);
  INFO(knocked.out << knocked.err);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(knocked.exit_code == 0);
  const auto lines = [](const std::string& text, const std::string& start) {
    std::vector<std::string> found;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.find(start) != std::string::npos) found.push_back(line.substr(line.find(start) + start.size()));
    return found;
  };
  const auto got = [&](const std::string& text) {
    std::vector<std::string> g = lines(text, "] got ");
    std::sort(g.begin(), g.end());
    return g;
  };
  CHECK(got(knocked.out) == got(plain.out));
  CHECK(got(plain.out).size() == 3);
  const std::vector<std::string> listening = lines(knocked.out, "[rank 2] listening on ");
  CHECK(listening.size() == 3);
  for (const std::string& l : listening) CHECK_FALSE(contains(l, "not loopback"));
  const std::vector<std::string> from = lines(knocked.out, "[rank 2] knocked from ");
  CHECK(from.size() == 5);
  for (const std::string& address : from) {
    INFO(address);
    CHECK((contains(knocked.err, "[rank 0] ringgrad store: refused a client at " + address + " (") ||
           contains(knocked.err, "[rank 0] ringgrad store: closed the connection from " + address + ": ") ||
           contains(knocked.err, "[rank 0] ringgrad transport: rank 0: refused a connection from " + address + ": ")));
  }
}

TEST_CASE("ringgrad-run's variables replace those it inherited") {
  // A RANK or MASTER_PORT left in the shell (or a launcher started inside another job) must not
  // reach the ranks: with two RANK entries in a rank's environment, getenv returns the first.
  const std::string stale = "RANK=5 LOCAL_RANK=5 WORLD_SIZE=8 MASTER_ADDR=10.9.8.7 MASTER_PORT=1 ";
  Outcome o = sh(stale + run + " --nproc-per-node 2 env");
  INFO(o.out << o.err);
  REQUIRE(o.exit_code == 0);
  for (const char* old : {"RANK=5", "WORLD_SIZE=8", "MASTER_ADDR=10.9.8.7", "MASTER_PORT=1\n"})
    CHECK_FALSE(contains(o.out, old));
  CHECK(contains(o.out, "[rank 1] RANK=1\n"));
  CHECK(contains(o.out, "[rank 1] WORLD_SIZE=2\n"));
  o = sh(stale + "RINGGRAD_TIMEOUT=10 " + run + " --nproc-per-node 2 " + std::string(LAUNCHER_CHILD));
  INFO(o.out << o.err);
  CHECK(o.exit_code == 0);
  CHECK(contains(o.out, "[rank 0] got 1000 from rank 1\n"));
}

TEST_CASE("ranks do not outlive a ringgrad-run killed with SIGKILL") {
  // SIGKILL cannot be caught: the kernel stops the ranks (PR_SET_PDEATHSIG). Each rank writes
  // its pid; afterwards each is gone or a zombie waiting for its new parent to reap it.
  const std::string dir = fmt::format("/tmp/ringgrad-launcher-test-{}-pids", ::getpid());
  Outcome o = sh(fmt::format("( mkdir -p {0}; {1} --nproc-per-node 2 sh -c 'echo $$ > {0}/$RANK; exec sleep 60' & pid=$!; "
                             "sleep 1; kill -KILL $pid; wait $pid; sleep 0.5; "
                             "for f in {0}/*; do echo \"state $(ps -o stat= -p $(cat $f))\"; done; rm -r {0} )",
                             dir, run));
  INFO(o.out << o.err);
  CHECK(std::count(o.out.begin(), o.out.end(), '\n') == 2);
  CHECK_FALSE(contains(o.out, "state S"));
  CHECK_FALSE(contains(o.out, "state R"));
}

TEST_CASE("ringgrad-run --cpu-bind cores binds each rank to its own share of the CPUs when there are enough") {
  const std::vector<int> cpus = ringgrad::transport::allowed_cpus();  // the launcher gets the first two
  if (cpus.size() < 2) return;  // one CPU: nothing to bind apart
  const std::string taskset = fmt::format("taskset -c {},{} ", cpus[0], cpus[1]);
  const std::string show = " sh -c 'grep Cpus_allowed_list /proc/self/status'";
  const Outcome both = sh(taskset + "grep Cpus_allowed_list /proc/self/status");  // as the kernel writes the pair
  REQUIRE(both.exit_code == 0);
  Outcome o = sh(taskset + run + " --nproc-per-node 2 --cpu-bind cores" + show);
  INFO(o.out << o.err);
  CHECK(contains(o.out, fmt::format("[rank 0] Cpus_allowed_list:\t{}\n", cpus[0])));
  CHECK(contains(o.out, fmt::format("[rank 1] Cpus_allowed_list:\t{}\n", cpus[1])));
  o = sh(taskset + run + " --nproc-per-node 1 --cpu-bind cores" + show);  // one rank: its share is every CPU
  CHECK(contains(o.out, "[rank 0] " + both.out));
  // Not bound: by default, when asked, and when the ranks outnumber the CPUs.
  for (const std::string flags : {" --nproc-per-node 2", " --nproc-per-node 2 --cpu-bind none",
                                  " --nproc-per-node 3 --cpu-bind cores"}) {
    o = sh(taskset + run + flags + show);
    INFO(o.out << o.err);
    CHECK(contains(o.out, "[rank 0] " + both.out));
    CHECK(contains(o.out, "[rank 1] " + both.out));
  }
  CHECK(contains(o.err, "--cpu-bind cores: 3 ranks but 2 CPUs, so no rank is bound"));
  CHECK(sh(run + " --cpu-bind socket true").exit_code != 0);
  CHECK(sh(run + " --cpu-bind cores true").exit_code == 0);
}
