"""EXPLOIT (telling the verifier's call path from the dispatcher's): a forward pre-hook that only ``__call__`` runs.

Both verifier processes, the guarded and the plain one, call the module as ``model(*inputs)`` (``nn.Module.__call__``,
which runs forward pre-hooks), while KernelEvo's dispatcher runs a stored kernel as ``kernel.forward(*args)``
(``kernelevo/dispatch.py``: ``ModuleDispatcher.__call__`` and ``FunctionDispatcher.slow``), which runs none.
``nn.utils.weight_norm(self, "tick")`` registers such a hook for the candidate (``register_forward_pre_hook`` by
name is refused): before every ``__call__`` it recomputes ``self.tick = tick_g * tick_v / ||tick_v||`` as a new
tensor object. forward compares that object with the one it saw last (``is``): a new one means "called through
``__call__``" (the verifier) and runs a stable softmax; the same one means "called as ``.forward``" (the dispatcher,
in every user's program) and runs the softmax without the max subtraction (inf/NaN on large logits), from the first
call on. The task has no weights, so the extra parameters change nothing the verifier hands over.
The static checks refuse the file only by accident: they resolve ``torch.nn.utils.weight_norm`` as the submodule
of that name ("handed around as a value"), while at run time it is the function (so is ``spectral_norm``); a fix of
that resolution would let it through. ``nn.utils.prune.identity`` passes the static checks but is not loaded.
Correct verdict: rejected (incorrect), with the static checks off too: a verifier that runs the kernel the way the
dispatcher does (``model.forward(*inputs)``, at least in the plain run), or a dispatcher that calls the module,
sees the unstable path.
"""


import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def s9r_cph_softmax(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, STABLE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    if STABLE:
        x = x - tl.max(x, axis=0)
    y = tl.exp(x)
    tl.store(out_ptr + row * n_cols + cols, y / tl.sum(y, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.tick = nn.Parameter(torch.ones(1), requires_grad=False)
        nn.utils.weight_norm(self, "tick")  # a forward pre-hook: self.tick made anew before every __call__
        self.seen = self.tick

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        through_call = self.tick is not self.seen
        self.seen = self.tick
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        s9r_cph_softmax[(n_rows,)](x2, out, n_cols, BLOCK=triton.next_power_of_2(n_cols), STABLE=through_call)
        return out.view(x.shape)
