#!/usr/bin/python3
"""ringgrad's torch backend, checked with real processes: every call torch.distributed makes of a
process group against values computed here another way (each rank's input is a known function of
its rank, so each result has a closed form), the dtypes and operators it maps, non-contiguous
tensors, batches of sends and receives, futures, and the errors of bad input and of a dead rank.

    PYTHONPATH=build/python tests/torch/backend_test.py [-k PATTERN]
"""
import datetime
import os
import socket
import sys
import time
import unittest

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import ringgrad_torch  # noqa: F401  registers "ringgrad"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank, world, port, body, timeout_s):
    torch.set_num_threads(1)
    dist.init_process_group("ringgrad", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout_s))
    body(rank, world)
    dist.destroy_process_group()


def run_ranks(world, body, timeout_s=60):
    """body(rank, world) in `world` spawned processes in one ringgrad group; a rank's exception
    fails the test with its traceback."""
    mp.spawn(_entry, args=(world, free_port(), body, timeout_s), nprocs=world)


def expect_error(fn, *parts):
    """fn() raises RuntimeError whose message holds every one of `parts`."""
    try:
        fn()
    except RuntimeError as e:
        for part in parts:
            assert part in str(e), f"{part!r} not in the error: {e}"
        return str(e)
    raise AssertionError(f"no error; expected one saying {parts}")


# --- Bodies: module-level functions, so that spawn can find them ----------------------------------

def collectives_match_closed_forms(r, p):
    ranks = torch.arange(p, dtype=torch.float64)
    # all_reduce: each rank holds (r + 1) * [0, 1, ..., 6]; the sum is p(p+1)/2 times that.
    base = torch.arange(7, dtype=torch.float64)
    for op, factor in ((dist.ReduceOp.SUM, p * (p + 1) / 2), (dist.ReduceOp.MAX, p), (dist.ReduceOp.MIN, 1),
                       (dist.ReduceOp.PRODUCT, float(torch.prod(ranks + 1))), (dist.ReduceOp.AVG, (p + 1) / 2)):
        x = (r + 1) * base.clone()
        expected = base * factor if op != dist.ReduceOp.PRODUCT else base ** p * factor
        dist.all_reduce(x, op)
        assert torch.allclose(x, expected), (op, x, expected)
    # broadcast and reduce from the last rank
    root = p - 1
    x = torch.full((5,), float(r))
    dist.broadcast(x, root)
    assert torch.equal(x, torch.full((5,), float(root)))
    x = torch.full((3,), float(r + 1))
    dist.reduce(x, root, dist.ReduceOp.SUM)
    if r == root:
        assert torch.equal(x, torch.full((3,), p * (p + 1) / 2))
    # all_gather (a list), its flat form, gather and scatter: block q is rank q's.
    mine = torch.tensor([r, 10 * r], dtype=torch.int64)
    blocks = [torch.empty(2, dtype=torch.int64) for _ in range(p)]
    dist.all_gather(blocks, mine)
    assert all(torch.equal(blocks[q], torch.tensor([q, 10 * q])) for q in range(p))
    flat = torch.empty(2 * p, dtype=torch.int64)
    dist.all_gather_into_tensor(flat, mine)
    assert torch.equal(flat, torch.stack([torch.tensor([q, 10 * q]) for q in range(p)]).view(-1))
    gathered = [torch.empty(2, dtype=torch.int64) for _ in range(p)] if r == 0 else None
    dist.gather(mine, gathered, dst=0)
    if r == 0:
        assert all(torch.equal(gathered[q], torch.tensor([q, 10 * q])) for q in range(p))
    out = torch.empty(2, dtype=torch.int64)
    dist.scatter(out, [torch.tensor([q, -q]) for q in range(p)] if r == 0 else None, src=0)
    assert torch.equal(out, torch.tensor([r, -r]))
    # reduce_scatter: block q of every rank's input is (rank + 1) * (q + 1); block r of the sum.
    out = torch.empty(4)
    dist.reduce_scatter(out, [torch.full((4,), float((r + 1) * (q + 1))) for q in range(p)])
    assert torch.equal(out, torch.full((4,), (r + 1) * p * (p + 1) / 2))
    big = torch.cat([torch.full((4,), float((r + 1) * (q + 1))) for q in range(p)])
    dist.reduce_scatter_tensor(out, big)
    assert torch.equal(out, torch.full((4,), (r + 1) * p * (p + 1) / 2))
    # all_to_all_single, equal blocks: rank r sends 100 r + q to rank q.
    send = torch.tensor([100 * r + q for q in range(p)], dtype=torch.int32)
    recv = torch.empty(p, dtype=torch.int32)
    dist.all_to_all_single(recv, send)
    assert torch.equal(recv, torch.tensor([100 * q + r for q in range(p)], dtype=torch.int32))
    # ... with split sizes: rank r sends q + 1 rows of 2 to rank q, each row (r, q).
    send = torch.cat([torch.tensor([[r, q]] * (q + 1), dtype=torch.float32) for q in range(p)])
    recv = torch.empty(p * (r + 1), 2)
    dist.all_to_all_single(recv, send, output_split_sizes=[r + 1] * p, input_split_sizes=[q + 1 for q in range(p)])
    assert torch.equal(recv, torch.cat([torch.tensor([[q, r]] * (r + 1), dtype=torch.float32) for q in range(p)]))
    # all_to_all with lists of different sizes: rank r sends r + q + 1 values r to rank q.
    outs = [torch.empty(q + r + 1) for q in range(p)]
    dist.all_to_all(outs, [torch.full((r + q + 1,), float(r)) for q in range(p)])
    assert all(torch.equal(outs[q], torch.full((q + r + 1,), float(q))) for q in range(p))
    dist.barrier()


def dtypes_and_operators(r, p):
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8):
        x = torch.full((9,), r + 1, dtype=dtype)
        dist.all_reduce(x)
        assert torch.equal(x, torch.full((9,), p * (p + 1) // 2, dtype=dtype)), (dtype, x)
    # bool: SUM and MAX are "any", PRODUCT and MIN are "all"; rank 0 alone holds True.
    for op, expected in ((dist.ReduceOp.SUM, True), (dist.ReduceOp.MAX, True), (dist.ReduceOp.PRODUCT, False),
                         (dist.ReduceOp.MIN, False)):
        x = torch.tensor([r == 0, True, False])
        dist.all_reduce(x, op)
        assert x.tolist() == [expected, True, False], (op, x)
    # int8 SUM wraps as two's complement: 100 per rank.
    x = torch.full((4,), 100, dtype=torch.int8)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((4,), 100, dtype=torch.int64).mul(p).to(torch.int8))
    # complex SUM: both parts add.
    x = torch.full((3,), complex(r, -r), dtype=torch.complex64)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((3,), complex(p * (p - 1) / 2, -p * (p - 1) / 2), dtype=torch.complex64))
    # dtypes ringgrad lacks move as bytes: broadcast int16.
    x = torch.full((5,), r - 7, dtype=torch.int16)
    dist.broadcast(x, 0)
    assert torch.equal(x, torch.full((5,), -7, dtype=torch.int16))
    # Refused by name, on the calling rank, before anything moves.
    expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32), dist.ReduceOp.BAND), "allreduce", "BAND")
    expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)), "allreduce", "Short")
    expect_error(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int8), dist.ReduceOp.MAX), "MAX", "Char")
    dist.barrier()


def non_contiguous_tensors(r, p):
    # A transposed view: reduced in a contiguous copy and copied back into the view's memory.
    base = torch.arange(12, dtype=torch.float32).view(3, 4) * (r + 1)
    view = base.t()
    dist.all_reduce(view)
    assert torch.equal(base, torch.arange(12, dtype=torch.float32).view(3, 4) * p * (p + 1) / 2)
    # Every second element; the others stay as they were.
    x = torch.zeros(10)
    x[::2] = r + 1
    dist.all_reduce(x[::2])
    assert torch.equal(x[::2], torch.full((5,), p * (p + 1) / 2)) and torch.equal(x[1::2], torch.zeros(5))
    # all_gather into non-contiguous outputs.
    outs = [torch.zeros(2, 3).t() for _ in range(p)]
    dist.all_gather(outs, torch.full((3, 2), float(r)))
    assert all(torch.equal(outs[q], torch.full((3, 2), float(q))) for q in range(p))


def point_to_point_and_futures(r, p):
    nxt, prv = (r + 1) % p, (r - 1) % p
    # Tags keep two messages to one peer apart when both are posted.
    if r == 0:
        dist.send(torch.tensor([7.0]), 1, tag=7)
        dist.send(torch.tensor([9.0]), 1, tag=9)
    elif r == 1:
        a, b = torch.empty(1), torch.empty(1)
        ra, rb = dist.irecv(a, 0, tag=7), dist.irecv(b, 0, tag=9)
        ra.wait(), rb.wait()
        assert (a.item(), b.item()) == (7.0, 9.0)
    # A ring of 8 MiB messages in one batch: every rank sends before it receives, which only a
    # batch (all receives posted first) lets finish.
    send = torch.full((2 << 20,), float(r))
    recv = torch.empty(2 << 20)
    for req in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, recv, prv)]):
        req.wait()
    assert torch.equal(recv, torch.full((2 << 20,), float(prv)))
    # Asynchronous calls complete in order; a future's value is the reduced tensor.
    xs = [torch.full((1000,), float(r + i)) for i in range(4)]
    works = [dist.all_reduce(x, async_op=True) for x in xs]
    fut = works[-1].get_future()
    for w in works:
        w.wait()
    assert all(w.is_completed() for w in works)
    assert torch.equal(fut.value()[0], torch.full((1000,), float(p * (p - 1) / 2 + 3 * p)))
    # A callback that issues a collective and waits for it (as PowerSGD's hooks do) must not
    # stall the worker that completes the first one.
    x = torch.ones(3)

    def then(f):
        y = f.value()[0] * 2
        dist.all_reduce(y, async_op=True).get_future().wait()
        return y

    chained = dist.all_reduce(x, async_op=True).get_future().then(then)
    assert torch.equal(chained.wait(), torch.full((3,), 2.0 * p * p))


def bad_input_names_op_and_ranks(r, p):
    # Element counts that differ: the argument check names both ranks' counts, on every rank.
    expect_error(lambda: dist.all_reduce(torch.ones(4 + r)), "all_reduce", "count", "on rank 0", "on rank 1")
    # dtypes that differ.
    expect_error(lambda: dist.all_reduce(torch.ones(4, dtype=torch.float32 if r == 0 else torch.float64)),
                 "all_reduce", "dtype")
    # all_to_all_single split sizes that do not pair up.
    splits = [1] * p if r == 0 else [2] * p
    expect_error(lambda: dist.all_to_all_single(torch.empty(sum(splits)), torch.empty(sum(splits)),
                                                output_split_sizes=splits, input_split_sizes=splits), "all_to_all_v")
    # The group goes on after each refusal.
    x = torch.ones(2)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((2,), float(p)))
    # A wait with a timeout returns an error in time while the other ranks are late to the call;
    # the call itself still completes once they come.
    work = dist.broadcast(torch.ones(1), 0, async_op=True) if r == 0 else None
    if r == 0:
        start = time.time()
        expect_error(lambda: work.wait(timeout=datetime.timedelta(seconds=1)), "timed out")
        assert time.time() - start < 30
    else:
        time.sleep(3)
        work = dist.broadcast(torch.ones(1), 0, async_op=True)
    work.wait()


def dead_rank_fails_the_others(r, p):
    x = torch.ones(1000)
    dist.all_reduce(x)
    if r == p - 1:
        os._exit(0)  # dies without a word, as a crashed process would
    start = time.time()
    expect_error(lambda: dist.all_reduce(x), "rank")
    assert time.time() - start < 20, "the error came only after the timeout"
    os._exit(0)  # the group is broken: destroying it would wait on the dead rank


class Backend(unittest.TestCase):
    def test_collectives_match_closed_forms_on_2_ranks(self):
        run_ranks(2, collectives_match_closed_forms)

    def test_collectives_match_closed_forms_on_3_ranks(self):
        run_ranks(3, collectives_match_closed_forms)

    def test_dtypes_and_operators(self):
        run_ranks(2, dtypes_and_operators)

    def test_non_contiguous_tensors(self):
        run_ranks(2, non_contiguous_tensors)

    def test_point_to_point_and_futures(self):
        run_ranks(3, point_to_point_and_futures)

    def test_bad_input_names_op_and_ranks(self):
        run_ranks(2, bad_input_names_op_and_ranks)

    def test_dead_rank_fails_the_others_in_time(self):
        run_ranks(3, dead_rank_fails_the_others, timeout_s=600)


if __name__ == "__main__":
    unittest.main()
