"""Run inputs in child processes with a time and a memory limit, and count what went wrong.

Owns the worker pool. Workers are forked from a parent that has already built everything the
inputs draw on (parsers, corpus, bombs), so they start in milliseconds and share it. A worker
handles batches of input indices, generating each input from (seed, index) itself, under:

* a memory bound: an input whose peak RSS grows past it (or that meets a MemoryError) is
  charged with "memory"; ``RLIMIT_AS`` at twice the bound keeps a runaway input from taking
  the machine (an allocation past it fails with MemoryError where it is made);
* a time limit per input: a SIGALRM timer raises in the worker (naming where it was stuck);
  should that not come back (a C call that never returns), the parent kills the worker.

After a hang, an out-of-memory or a death the worker is replaced, and the parent knows which
input it was on from a shared slot the worker writes before each input, so the rest of the
batch is handed on and every index is run exactly once. Workers also retire after a number of
inputs, so slow leaks cannot build up. Does not know what an input is (see `targets`).
"""

from __future__ import annotations

import faulthandler
import multiprocessing as mp
import os
import resource
import signal
import sys
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from multiprocessing.connection import wait

from .findings import CATEGORIES, CRASH, HANG, HARNESS, MEMORY, Finding, describe, from_exception, where_in_stack

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    memory_bytes: int = 512 * MiB  # growth over the worker's size at start
    grace_s: float = 10.0  # how long past the timeout before the parent kills the worker
    inputs_per_worker: int = 20000


@dataclass
class Failure:
    index: int
    finding: Finding
    size: int
    meta: dict = field(default_factory=dict)


@dataclass
class Result:
    inputs: int = 0
    inputs_with: Counter = field(default_factory=Counter)  # category -> inputs with at least one
    findings: Counter = field(default_factory=Counter)  # (category, signature) -> inputs
    failures: list[Failure] = field(default_factory=list)  # the smallest few per signature
    seconds: float = 0.0
    keep_per_signature: int = 5

    def add(self, failures: list[Failure], inputs: int) -> None:
        self.inputs += inputs
        by_index: dict[int, set[str]] = {}
        for failure in failures:
            key = (failure.finding.category, failure.finding.signature)
            self.findings[key] += 1
            by_index.setdefault(failure.index, set()).add(failure.finding.category)
            same = [f for f in self.failures if (f.finding.category, f.finding.signature) == key]
            if len(same) < self.keep_per_signature:
                self.failures.append(failure)
            else:
                largest = max(same, key=lambda f: (f.size, f.index))
                if (failure.size, failure.index) < (largest.size, largest.index):
                    self.failures.remove(largest)
                    self.failures.append(failure)
        for categories in by_index.values():
            for category in categories:
                self.inputs_with[category] += 1

    def counts(self) -> dict[str, int]:
        return {c: self.inputs_with.get(c, 0) for c in CATEGORIES}


class _Timeout(BaseException):
    """Raised by the per-input timer; a BaseException so that `except Exception` cannot eat it."""

    def __init__(self, stuck_at: str):
        super().__init__(stuck_at)
        self.stuck_at = stuck_at


def _on_alarm(signum, frame):
    raise _Timeout(where_in_stack(frame))


def _rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def run_one(target, seed: int, index: int, limits: Limits, rss_start: int) -> tuple[list[Finding], bool, int, dict]:
    """Generate and check one input in this process: (findings, replace the worker?, size, meta)."""
    size, meta = 0, {}
    escaped = None
    signal.setitimer(signal.ITIMER_REAL, limits.timeout_s)
    try:
        try:
            case = target.generate(seed, index)
        except Exception as e:  # noqa: BLE001 - a generator bug must not pass for a package crash
            return [Finding(HARNESS, f"generator: {type(e).__name__}: {e}", describe(e))], False, 0, {}
        size, meta = case.size, case.meta()
        found = target.check(case)
    except _Timeout as t:
        found = [Finding(HANG, f"hang @ {t.stuck_at}", f"no result after {limits.timeout_s} s")]
    except Exception as e:  # noqa: BLE001 - anything that escapes the target is a finding
        escaped, found = e, []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    case = None
    over = _rss_bytes() - rss_start > limits.memory_bytes
    if escaped is not None:
        try:
            finding = from_exception(escaped)
        except MemoryError:
            finding = Finding(MEMORY, f"{type(escaped).__name__} (while out of memory)", "")
        if over and finding.category != MEMORY:
            # Past the bound, C code fails in odd ways (SystemError, say): the memory is the finding.
            finding = Finding(MEMORY, f"{finding.signature} (over the bound)", finding.detail)
        found.append(finding)
        escaped = None
    if over and not any(f.category == MEMORY for f in found):
        found.append(
            Finding(MEMORY, "peak RSS over the bound", f"peak RSS grew {(_rss_bytes() - rss_start) // MiB} MiB")
        )
    found = list({(f.category, f.signature): f for f in reversed(found)}.values())[::-1]  # once per input
    replace = any(f.category in (HANG, MEMORY) for f in found)
    return found, replace, size, meta


def _worker(target, seed: int, limits: Limits, conn, slot) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles ^C
    faulthandler.disable()  # a worker's death is reported by the parent; no stack dump (pytest turns it on)
    signal.signal(signal.SIGALRM, _on_alarm)
    vm = _vm_bytes()
    # The hard cap sits at twice the bound: an input is charged with "memory" from its peak RSS
    # passing the bound, and the cap only keeps a runaway one from taking the machine.
    resource.setrlimit(resource.RLIMIT_AS, (vm + 2 * limits.memory_bytes, resource.getrlimit(resource.RLIMIT_AS)[1]))
    rss_start = _rss_bytes()
    done = 0
    while True:
        task = conn.recv()
        if task is None:
            return
        start, stop = task
        failures: list[Failure] = []
        index = start
        retire = False
        while index < stop:
            slot[0], slot[1] = index, time.monotonic()
            try:
                found, replace, size, meta = run_one(target, seed, index, limits, rss_start)
            except MemoryError:  # in the bookkeeping around the input, with memory nearly gone
                found, replace, size, meta = [Finding(MEMORY, "MemoryError (in the harness)", "")], True, 0, {}
            slot[1] = 0.0
            failures += [Failure(index, f, size, meta) for f in found]
            index += 1
            done += 1
            if replace or done >= limits.inputs_per_worker:
                retire = True
                break
        conn.send((start, index, stop, failures, retire))
        if retire:
            return


class _Slot:
    def __init__(self, ctx, target, seed, limits):
        self.slot = ctx.RawArray("d", 2)
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(target, seed, limits, child, self.slot), daemon=True)
        self.process.start()
        child.close()
        self.task: tuple[int, int] | None = None
        self.retiring = False


class _Pool:
    """Worker processes, the batches still to run and what they found."""

    def __init__(
        self, target, seed: int, indices: range, jobs: int, limits: Limits, batch: int, keep_per_signature: int
    ) -> None:
        self.ctx = mp.get_context("fork")
        self.target, self.seed, self.jobs, self.limits = target, seed, jobs, limits
        self.result = Result(keep_per_signature=keep_per_signature)
        self.todo = deque((s, min(s + batch, indices.stop)) for s in range(indices.start, indices.stop, batch))
        self.workers: list[_Slot] = []

    def busy(self) -> bool:
        return bool(self.todo) or any(w.task for w in self.workers)

    def assign(self, w: _Slot) -> bool:
        if not self.todo:
            return False
        w.task = self.todo.popleft()
        w.conn.send(w.task)
        return True

    def spawn(self) -> None:
        while len(self.workers) < self.jobs and self.todo:
            w = _Slot(self.ctx, self.target, self.seed, self.limits)
            self.workers.append(w)
            self.assign(w)

    def lost(self, w: _Slot, category: str, signature: str, detail: str) -> None:
        """A worker that will not report: charge its current input, hand on the rest of its batch."""
        assert w.task is not None, "only a worker with a batch can lose it"
        start, stop = w.task
        current = int(w.slot[0]) if w.slot[1] else start
        current = min(max(current, start), stop - 1)
        if current > start:
            self.todo.appendleft((start, current))  # done but unreported: run again (deterministic)
        if current + 1 < stop:
            self.todo.appendleft((current + 1, stop))
        try:
            case = self.target.generate(self.seed, current)
            size, meta = case.size, case.meta()
        except Exception:  # noqa: BLE001 - the record of the failure matters more than its size
            size, meta = 0, {}
        self.result.add([Failure(current, Finding(category, signature, detail), size, meta)], 1)
        w.task = None
        w.retiring = True

    def collect(self) -> None:
        """Wait up to a second, then take each busy worker's report, death or overrun."""
        busy = [w for w in self.workers if w.task]
        wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=1.0)
        for w in busy:
            message = self._receive(w)
            if message is not None:
                start, reached, stop, failures, w.retiring = message
                self.result.add(failures, reached - start)
                if reached < stop:
                    self.todo.appendleft((reached, stop))
                w.task = None
            elif not w.process.is_alive():
                code = w.process.exitcode
                name = signal.Signals(-code).name if code and code < 0 else f"exit {code}"
                # SIGKILL from outside is almost always the kernel's out-of-memory killer.
                category = MEMORY if code == -signal.SIGKILL else CRASH
                self.lost(w, category, f"worker died ({name})", "the worker process ended while running this input")
            elif w.slot[1] and time.monotonic() - w.slot[1] > self.limits.timeout_s + self.limits.grace_s:
                w.process.kill()
                w.process.join()
                limit = self.limits.timeout_s + self.limits.grace_s
                self.lost(w, HANG, "hang (killed: the timer did not fire)", f"ran past {limit} s")

    @staticmethod
    def _receive(w: _Slot):
        if not w.conn.poll():
            return None
        try:
            return w.conn.recv()
        except (EOFError, OSError):
            return None

    def reassign_or_retire(self) -> None:
        for w in list(self.workers):
            if w.task is not None:
                continue
            if not w.retiring and self.assign(w):
                continue
            if not w.retiring:
                w.conn.send(None)
            w.process.join(timeout=10)
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()
            self.workers.remove(w)

    def kill_all(self) -> None:
        for w in self.workers:
            if w.process.is_alive():
                w.process.kill()


def run(
    target,
    seed: int,
    indices: range,
    *,
    jobs: int = 1,
    limits: Limits = Limits(),
    batch: int = 200,
    progress=None,
    keep_per_signature: int = 5,
) -> Result:
    """Run ``target`` on every index in ``indices``; return what was found."""
    target.warm()
    pool = _Pool(target, seed, indices, jobs, limits, batch, keep_per_signature)
    started = last_report = time.monotonic()
    try:
        while pool.busy():
            pool.spawn()
            pool.collect()
            pool.reassign_or_retire()
            now = time.monotonic()
            if progress and now - last_report >= 10:
                last_report = now
                progress(pool.result, len(indices), now - started)
    finally:
        pool.kill_all()
    pool.result.seconds = time.monotonic() - started
    return pool.result


def print_progress(result: Result, total: int, seconds: float) -> None:
    rate = result.inputs / seconds if seconds else 0
    counts = " ".join(f"{k}={v}" for k, v in result.counts().items())
    print(f"  {result.inputs}/{total} inputs, {rate:.0f}/s, {counts}", file=sys.stderr, flush=True)
