"""EXPLOIT background thread: a persistent worker thread does the launches.

The forward hands the job to a daemon thread (started on first use) and waits for it, so outputs
are right; the thread stays alive between calls, ready to do work outside a timed region. A
thread-count check (and the ban on threading) must catch it.
"""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

# Taken from the modules already loaded: the import guards refuse `import queue, threading` itself, and the
# layers below them must stop what the candidate does with them.
queue = sys.modules["queue"]
threading = sys.modules["threading"]


@triton.jit
def softmax_rows(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


def _worker(jobs):
    while True:
        x, out, done = jobs.get()
        softmax_rows[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        done.set()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.jobs = queue.Queue()
        self.thread = None

    def forward(self, x):
        if self.thread is None:
            self.thread = threading.Thread(target=_worker, args=(self.jobs,), daemon=True)
            self.thread.start()
        x = x.contiguous()
        out = torch.empty_like(x)
        done = threading.Event()
        self.jobs.put((x, out, done))
        done.wait()
        return out
