#!/usr/bin/env python3
"""Runs a command and prints one line of JSON: wall seconds, CPU seconds (user + sys of the
process and its children), and memory sampled from /proc every 2 ms: the peak of RssAnon (the
process's own memory: the memory a command is responsible for) and of VmRSS, and VmHWM (peak resident set,
which also counts the pages of memory-mapped files that were read).

    bench/memtime.py [--label NAME] -- CMD ARGS...

Inside a Python process, `anon_sampler()` gives the same sampling for a stretch of code.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time


def status(pid: int) -> dict:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("RssAnon", "VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0]) * 1024
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return out


class anon_sampler:
    """Samples this process's RssAnon every `period` seconds while the `with` block runs:
    `.peak` and `.start` (bytes), `.seconds` (wall time of the block)."""

    def __init__(self, period: float = 0.002) -> None:
        self.period = period
        self.peak = 0
        self.start = 0
        self._stop = threading.Event()

    def __enter__(self) -> "anon_sampler":
        self.start = status(os.getpid()).get("RssAnon", 0)
        self.peak = self.start
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        pid = os.getpid()
        while not self._stop.is_set():
            self.peak = max(self.peak, status(pid).get("RssAnon", 0))
            time.sleep(self.period)

    def __exit__(self, *exc: object) -> None:
        self.peak = max(self.peak, status(os.getpid()).get("RssAnon", 0))
        self.seconds = time.monotonic() - self._t0
        self._stop.set()
        self._thread.join()


def main() -> None:
    args = sys.argv[1:]
    label = None
    if args[:1] == ["--label"]:
        label, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_anon = peak_rss = hwm = 0
    while p.poll() is None:
        s = status(p.pid)
        peak_anon = max(peak_anon, s.get("RssAnon", 0))
        peak_rss = max(peak_rss, s.get("VmRSS", 0))
        hwm = max(hwm, s.get("VmHWM", 0))
        time.sleep(0.002)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode not in (0, 3):
        print(f"{args[0]} exited {p.returncode}: {err}", file=sys.stderr)
        sys.exit(1)
    print(
        json.dumps(
            {
                "label": label or " ".join(args[:2]),
                "wall_s": round(wall, 4),
                "cpu_s": round(cpu, 3),
                "peak_anon_mb": round(peak_anon / 2**20, 1),
                "peak_rss_mb": round(peak_rss / 2**20, 1),
                "hwm_mb": round(max(hwm, after.ru_maxrss * 1024) / 2**20, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
