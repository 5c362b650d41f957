#!/usr/bin/python3
"""PyTorch's own distributed test suite (torch/testing/_internal/distributed/distributed_test.py,
class _DistTestBase) for one backend and world size, under a spawn harness like PyTorch's
test/distributed/test_distributed_spawn.py: each test starts WORLD_SIZE fresh processes that
meet through a file:// init method.

    BACKEND=ringgrad|gloo|ringgrad-as-gloo WORLD_SIZE=2 PYTHONPATH=build/python tests/torch/distributed_suite.py
        [-k PATTERN] [-x PATTERN] [--json FILE] [--compare FILE]

For ringgrad the suite is told what the backend implements (DistTestCases: a plugin with DDP
and subgroups, without receives from any source, as NCCL), so its DDP and new_group tests run
as they do for gloo, and its profiler checks look for "ringgrad:..." events. The suite still runs
some tests for gloo alone, by name (coalesced all-reduce with MIN, MAX and PRODUCT, the *_object
collectives, get_future, ...): ringgrad-as-gloo runs them on ringgrad, which then answers to
gloo's name (torch's gloo constructor makes a ringgrad process group), so that only the tests
that need gloo itself fail (its monitored barrier, its timeouts, receiving from any source).
Prints one line per test that did not pass (its first error line), then the counts and the
wall time; --json writes every test's outcome for scripts/torch_suite.sh to compare backends.
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time
import unittest

BACKEND = os.environ.setdefault("BACKEND", "ringgrad")
AS_GLOO = BACKEND == "ringgrad-as-gloo"
if AS_GLOO:
    os.environ["BACKEND"] = "gloo"  # what the suite sees, here and in every spawned rank
    os.environ["RINGGRAD_SUITE_AS_GLOO"] = "1"
AS_GLOO = AS_GLOO or os.environ.get("RINGGRAD_SUITE_AS_GLOO") == "1"
BACKEND = "ringgrad-as-gloo" if AS_GLOO else BACKEND
os.environ.setdefault("WORLD_SIZE", "2")
# A test that hangs fails after this many seconds (PyTorch's default is 300).
os.environ.setdefault("DISTRIBUTED_TESTS_DEFAULT_TIMEOUT", "180")



def allow_dataclass_instance_defaults():
    """PyTorch 1.13's torch.distributed._shard gives a dataclass field a dataclass instance as its
    default, which Python 3.11 refuses ("mutable default ... use default_factory"), so every DDP
    test that imports it errors before it starts, whatever the backend. Such a default's class is
    made hashable (by identity) just before Python checks it, and those tests run."""
    import dataclasses
    check = dataclasses._get_field

    def get_field(cls, name, *rest):
        default = cls.__dict__.get(name)
        if isinstance(default, dataclasses.Field):
            default = default.default
        if dataclasses.is_dataclass(default) and type(default).__hash__ is None:
            type(default).__hash__ = object.__hash__
        return check(cls, name, *rest)

    dataclasses._get_field = get_field


if sys.version_info >= (3, 11):
    allow_dataclass_instance_defaults()  # here and in every spawned rank, before torch loads
if BACKEND.startswith("ringgrad"):
    import ringgrad_torch  # registers the backend, here and in every spawned rank

import torch  # noqa: E402
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if BACKEND == "ringgrad":
    for feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[feature].add("ringgrad")
    # Like NCCL's and UCC's, a receive names its source rank (the transport matches messages
    # per peer; see docs/collectives.md): the suite's own way of saying so.
    DistTestCases.skip_collective["sendrecv anysource"].add("ringgrad")
if AS_GLOO:
    import torch.distributed.distributed_c10d as c10d

    def gloo_named_ringgrad(store, rank, size, timeout):
        return ringgrad_torch.create_process_group(store, rank, size, timeout)

    real_gloo, wrap = c10d.ProcessGroupGloo, c10d._create_process_group_wrapper
    c10d.ProcessGroupGloo = gloo_named_ringgrad  # what init_process_group and new_group call for "gloo"

    def wrapper_over_real_gloo(*args, **kwargs):
        """TORCH_DISTRIBUTED_DEBUG=DETAIL wraps each group in a checker that compares the ranks'
        calls over a helper group, which must be gloo's own."""
        c10d.ProcessGroupGloo = real_gloo
        try:
            return wrap(*args, **kwargs)
        finally:
            c10d.ProcessGroupGloo = gloo_named_ringgrad

    c10d._create_process_group_wrapper = wrapper_over_real_gloo

import torch.testing._internal.distributed.distributed_test as distributed_test  # noqa: E402
from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402

if BACKEND == "ringgrad":  # its Works carry the profiler's events as gloo's do ("ringgrad:all_reduce")
    distributed_test.PROFILING_SUPPORTED_BACKENDS.append("ringgrad")
    distributed_test.SEND_RECV_PROFILING_SUPPORTED_BACKENDS.append("ringgrad")
if AS_GLOO:  # the events keep ringgrad's name whatever name the backend answers to
    find_events = distributed_test.get_profiling_event
    distributed_test.get_profiling_event = lambda postfix, profiler: find_events(
        postfix.replace("gloo:", "ringgrad:", 1), profiler)


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()


def first_error_line(text):
    """The line that says what went wrong: the exception line of the first rank that failed (or
    of the harness, when no rank did)."""
    ranks = re.split(r"Process \d+ exited with error code \d+ and exception:", text)
    block = ranks[1] if len(ranks) > 1 else text
    for line in reversed(block.splitlines()):
        if re.match(r"[A-Za-z_][\w.]*(Error|Exception|Failure|Interrupt)\b", line):
            return line.strip()[:300]
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    return (lines[-1] if lines else "(no message)")[:300]


class Recorder(unittest.TextTestResult):
    """Keeps each test's outcome and the one line that explains a failure or a skip."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = {}

    def _name(self, test):
        return test.id().split(".")[-1]

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes[self._name(test)] = ("passed", "")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes[self._name(test)] = ("failed", first_error_line(self._exc_info_to_string(err, test)))

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes[self._name(test)] = ("failed", first_error_line(self._exc_info_to_string(err, test)))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes[self._name(test)] = ("skipped", str(reason)[:300])

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self.outcomes[self._name(test)] = ("passed", "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self.outcomes[self._name(test)] = ("failed", "unexpected success")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-k", dest="patterns", action="append", default=[],
                        help="run only tests whose name contains this (unittest's -k; repeatable)")
    parser.add_argument("-x", dest="excludes", action="append", default=[],
                        help="leave out tests whose name contains this (repeatable)")
    parser.add_argument("--json", help="write {test: [outcome, reason]} here")
    parser.add_argument("--compare", action="append", default=[],
                        help="an earlier --json file (repeatable): once gloo's and ringgrad's on this world size are "
                             "there, list the tests that pass with gloo but not with ringgrad")
    args = parser.parse_args()
    # The suite's barrier and scratch files live under TEMP_DIR, made once here.
    temp_dir = tempfile.mkdtemp(prefix="torch_suite_")
    os.environ["TEMP_DIR"] = temp_dir
    for sub in ("barrier", "test_dir"):
        os.mkdir(os.path.join(temp_dir, sub))
    loader = unittest.TestLoader()
    loader.testNamePatterns = [f"*{p}*" for p in args.patterns] or None
    suite = unittest.TestSuite(t for t in loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
                               if not any(x in t.id() for x in args.excludes))
    log = open(os.path.join(temp_dir, "unittest.log"), "w")
    runner = unittest.TextTestRunner(stream=log, verbosity=2, resultclass=Recorder)
    start = time.time()
    report, sys.stdout = sys.stdout, log  # what the test base prints about its processes goes to the log
    try:
        result = runner.run(suite)
    finally:
        sys.stdout = report
    wall = time.time() - start
    outcomes = result.outcomes
    for name, (outcome, reason) in sorted(outcomes.items()):
        if outcome == "failed":
            print(f"FAILED {name}: {reason}", flush=True)
    counts = {k: sum(1 for o, _ in outcomes.values() if o == k) for k in ("passed", "failed", "skipped")}
    print(f"{BACKEND} on {os.environ['WORLD_SIZE']} ranks: {len(outcomes)} tests, {counts['passed']} passed, "
          f"{counts['failed']} failed, {counts['skipped']} skipped in {wall:.0f} s (log: {log.name})", flush=True)
    run = {"backend": BACKEND, "world_size": int(os.environ["WORLD_SIZE"]), "wall_s": wall, "counts": counts,
           "tests": outcomes}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(run, f, indent=1, sort_keys=True)
    compare([run] + [json.load(open(path)) for path in args.compare if os.path.exists(path)])
    return 1 if counts["failed"] else 0


def compare(runs):
    """Prints the tests that pass with gloo but not with ringgrad on this world size, once both
    ran, with each one's outcome when ringgrad ran under gloo's name, if it did."""
    n = int(os.environ["WORLD_SIZE"])
    by = {r["backend"]: r["tests"] for r in runs if r["world_size"] == n}
    if "gloo" not in by or "ringgrad" not in by:
        return
    differ = [t for t, (outcome, _) in sorted(by["gloo"].items())
              if outcome == "passed" and by["ringgrad"].get(t, ["absent"])[0] != "passed"]
    print(f"passed with gloo but not with ringgrad on {n} ranks: {len(differ)}")
    still = 0
    for t in differ:
        outcome, reason = by["ringgrad"].get(t, ["absent", ""])
        line = f"  {t}: {outcome}: {reason}"
        if "ringgrad-as-gloo" in by:
            named, why = by["ringgrad-as-gloo"].get(t, ["absent", ""])
            line += f"; as gloo: {named}" + (f": {why}" if named != "passed" else "")
            still += named != "passed"
        print(line)
    if "ringgrad-as-gloo" in by:
        print(f"of those, not passing either when ringgrad runs under gloo's name: {still}")


if __name__ == "__main__":
    sys.exit(main())
