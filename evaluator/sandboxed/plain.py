"""The plain process: an accepted candidate run once more with no instrumentation at all, as a user's program runs it.

The guarded candidate process (:mod:`evaluator.sandboxed.candidate`) is unlike any user's program in ways a kernel
can test without touching the guards: it has imported modules a program need not load
(``hasattr(torch.utils, "cpp_extension")``), it wraps functions in Python (a tensor's ``tolist``), it warmed Triton's
driver up before the candidate existed. A kernel that computes correctly only where it sees such a tell passes every
guarded call. So the candidate that passed is imported once more here, in a fresh sandboxed process that has loaded
what a program using KernelEvo's dispatcher loads (``torch``, ``triton``, ``kernelevo.dispatch``) and nothing of the
verifier's instrumentation: no audit hook, no op recorder, no wrappers, no guard regions, no poisoned allocations,
no kernel-trace shim, no bounds checks (on CPU the Triton interpreter's bfloat16 casts round as a GPU's do, as in
the guarded process: the emulator's fidelity, not a check). Its inputs are plain tensors made the way a program
makes them; its outputs go to the reference process, which judges them as it judged the guarded calls.

What the outputs travel through is built so that no candidate code runs while they travel: every function the
hand-over calls is a C function bound before the candidate is imported, applied only to a ``torch.Tensor`` of that
exact type, with no torch function or dispatch mode left pushed; the bytes are written raw (no pickling, whose
registries a candidate could extend). That a candidate has no thread, hook or import-time patch that could act in
between rests on the static checks, which read every line of it whatever path it takes at run time, and on the
guarded run it already passed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import torch

from evaluator import placement
from evaluator.sandboxed import taskspec
from evaluator.sandboxed.loading import hand_over_state, load_fd, seed_construction
from evaluator.sandboxed.output_checks import Rejection, output_list

# The packages whose loaded modules a kernel can see by attribute (``hasattr(torch.utils, "cpp_extension")``).
VISIBLE_PACKAGES = ("torch", "triton", "kernelevo")
MAX_WRITE = 1 << 26  # bytes per os.write (a partial write is continued)


def loaded_modules() -> list[str]:
    """The modules of :data:`VISIBLE_PACKAGES` this process has loaded (compared with a plain program's in a test)."""
    return sorted(name for name in list(sys.modules) if name.split(".")[0] in VISIBLE_PACKAGES)


class PlainRunner:
    """Serves ``loaded_modules`` (before a candidate exists), ``load`` and ``run`` for one candidate."""

    def __init__(self, private: Path, device: str):
        import kernelevo.dispatch  # noqa: F401  (what a program that dispatches to stored kernels has loaded)

        self.private, self.device = Path(private), device
        self.outbox = self.private / "outbox"
        self.home = Path(os.environ.get("HOME") or self.private / "home")
        self.models: list[torch.nn.Module] = []  # built with the task's constructor arguments, then other ones
        self._candidate_seen = False
        # Bound before the candidate exists: C functions the hand-over calls (never looked up again).
        self._tensor, base = torch.Tensor, torch._C.TensorBase  # base: torch's C tensor type
        self._detach, self._to, self._reshape = base.detach, base.to, base.reshape
        self._contiguous, self._view, self._numpy, self._numel = base.contiguous, base.view, base.numpy, base.numel
        self._is_sparse, self._layout_of = base.__dict__["is_sparse"].__get__, base.__dict__["layout"].__get__
        self._dtype_of, self._shape_of = base.__dict__["dtype"].__get__, base.__dict__["shape"].__get__
        self._strided, self._uint8 = torch.strided, torch.uint8
        self._function_modes = getattr(torch._C, "_len_torch_function_stack", None)
        self._dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)
        self._write, self._open, self._close = os.write, os.open, os.close
        self._synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        self._modes = {"no_grad": torch.no_grad, "inference": torch.inference_mode, "grad": torch.enable_grad}
        if device == "cpu":  # the interpreter's bf16 casts as a GPU rounds them, as in the guarded process
            from evaluator.sandboxed.bounds import correct_interpreter

            correct_interpreter()

    def loaded_modules(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        if self._candidate_seen:
            return {"ok": False, "kind": "protocol", "message": "loaded_modules after a candidate was loaded"}
        return {"ok": True, "modules": loaded_modules()}

    def load(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Import the candidate where the user's repository has it and build ``ModelNew`` with the reference's
        weights, as the guarded process did (``fds[0]``: the reference's constructor arguments and tables); with
        ``fds[1]``, a second ``ModelNew`` built as the reference was with other constructor arguments."""
        if len(fds) not in (1, 2):
            raise taskspec.TaskError("load: expected one or two file descriptors (the reference models' states)")
        self._candidate_seen = True
        try:
            place = placement.from_request(req.get("module"))
        except ValueError as exc:
            raise taskspec.TaskError(f"load: {exc}") from None
        inits = [load_fd(fd) for fd in fds]
        path = self.home / place.relative
        try:
            module = taskspec.import_file(path, "candidate", name=place.module_name(self.home))
            cls = getattr(module, "ModelNew", None)
            if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
                raise Rejection("compile_error", "the candidate defines no `class ModelNew(nn.Module)`")
            self.models = [self._build(cls, init, int(req.get("init_seed", 0))) for init in inits]
        except Rejection:
            raise
        except Exception as exc:
            raise Rejection("crashed", f"loading the candidate in a plain process raised {type(exc).__name__}: "
                                       f"{str(exc)[:300]} (the guarded process loaded it: a kernel that behaves "
                                       "differently when it is not observed, or one that ignores or refuses "
                                       "other constructor arguments)") from exc
        return {"ok": True, "models": len(self.models)}

    def _build(self, cls: type, init: dict[str, Any], seed: int) -> torch.nn.Module:
        seed_construction(seed)
        model = cls(*list(init["init_inputs"]))
        with torch.no_grad():
            hand_over_state(model, dict(init["tables"]))
        return model.to(self.device)

    def run(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """The parent's calls in its order (``req["calls"]``: ``{"name", "input", "autograd", "varied_init",
        "judged"}``, ``input`` indexing ``fds``; ``varied_init``: the second model's call); a judged call's outputs
        written raw to ``outbox/<name>.raw``, described in the reply."""
        if not self.models:
            raise taskspec.TaskError("run before load")
        inputs = [load_fd(fd) for fd in fds]
        sent: dict[str, Any] = {}
        for k, call in enumerate(req["calls"]):
            where = f"plain call {k + 1}"
            # plain tensors as a program makes them: on the device, contiguous, in memory of their own
            values = [v.to(self.device).contiguous().clone() if isinstance(v, torch.Tensor) else v
                      for v in inputs[int(call["input"])]]
            mode = self._modes.get(str(call.get("autograd", "no_grad")), torch.no_grad)
            model = self.models[-1] if call.get("varied_init") else self.models[0]
            try:
                with mode():
                    raw = model(*values)
                outs = output_list(raw, where)
                if call.get("judged", True):
                    self._synchronize()
            except Rejection:
                raise
            except Exception as exc:
                raise Rejection("crashed", f"{where} raised {type(exc).__name__}: {str(exc)[:300]} (the same "
                                           "inputs passed in the guarded process: a kernel that behaves "
                                           "differently when it is not observed)") from exc
            if call.get("judged", True):
                sent[str(call["name"])] = self._hand_over(outs, self.outbox / f"{call['name']}.raw", where)
            del raw, outs
        return {"ok": True, "sent": sent}

    def _hand_over(self, outs: list[Any], path: Path, where: str) -> dict[str, Any]:
        """Write ``outs`` back to back as raw bytes; only bound C functions run on them (see the module docstring)."""
        if (self._function_modes is not None and self._function_modes()) or \
                (self._dispatch_modes is not None and self._dispatch_modes()):
            raise Rejection("cheat_suspected", f"{where}: forward left a torch function or dispatch mode pushed "
                                               "(it would run the candidate's code while its outputs are read)")
        described, chunks = [], []  # chunks: numpy arrays of bytes (buffers)
        for k, out in enumerate(outs):
            if type(out) is not self._tensor or self._is_sparse(out) or self._layout_of(out) != self._strided:
                raise Rejection("cheat_suspected", f"{where}: output {k} is not a plain strided torch.Tensor")
            host = self._contiguous(self._to(self._detach(out), "cpu", copy=True))
            described.append({"dtype": str(self._dtype_of(host)).removeprefix("torch."),
                              "shape": [int(n) for n in self._shape_of(host)]})
            if self._numel(host):
                chunks.append(self._numpy(self._view(self._reshape(host, (-1,)), self._uint8)))
        fd = self._open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            for chunk in chunks:
                data = memoryview(chunk).cast("B")  # type: ignore[arg-type]  # numpy arrays are buffers
                while len(data):
                    written = self._write(fd, data[:MAX_WRITE])
                    data = data[written:]
        finally:
            self._close(fd)
        return {"raw": described}
