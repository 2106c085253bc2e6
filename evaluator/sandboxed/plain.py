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
exact type, with no torch function or dispatch mode left pushed; a host tensor's bytes are read from its memory
(a ``ctypes`` view of its data pointer, past torch's dispatcher, where a Python kernel registered for a copy op
would run), a device tensor's copied to the host first; the bytes are written raw (no pickling, whose registries a
candidate could extend). Judged outputs stay alive to the end, as a program may keep them, and are read again after
the last call and compared byte for byte with what was written when they were returned (``memcmp`` from the C
library, bound like the rest): an output in a kept one's memory, or one changed after it was returned, is refused.
That a candidate has no thread, hook or import-time patch that could act in between rests on the static checks,
which read every line of it whatever path it takes at run time, and on the guarded run it already passed.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from evaluator import placement
from evaluator.sandboxed import taskspec
from evaluator.sandboxed.loading import enter_repository, hand_over_state, load_fd, seed_construction
from evaluator.sandboxed.near import Patches, apply_patches
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
        self.varied_refused: str | None = None  # why ModelNew refused other constructor arguments (raised)
        self._candidate_seen = False
        # Bound before the candidate exists: C functions the hand-over calls (never looked up again).
        self._tensor, base = torch.Tensor, torch._C.TensorBase  # base: torch's C tensor type
        self._detach, self._reshape = base.detach, base.reshape
        self._contiguous, self._is_contiguous, self._numel = base.contiguous, base.is_contiguous, base.numel
        self._data_ptr, self._element_size = base.data_ptr, base.element_size
        self._is_cpu = base.__dict__["is_cpu"].__get__
        self._untyped_storage, self._storage_data_ptr = base.untyped_storage, torch.UntypedStorage.data_ptr
        self._bytes_at, self._view = ctypes.c_char.__mul__, memoryview  # (c_char * n).from_address: no copy
        self._train = torch.nn.Module.train
        self._is_sparse, self._layout_of = base.__dict__["is_sparse"].__get__, base.__dict__["layout"].__get__
        self._dtype_of, self._shape_of = base.__dict__["dtype"].__get__, base.__dict__["shape"].__get__
        self._strided = torch.strided
        self._function_modes = getattr(torch._C, "_len_torch_function_stack", None)
        self._dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)
        self._write, self._open, self._close = os.write, os.open, os.close
        self._clock = time.perf_counter
        # device outputs reach the host through pinned buffers: the C functions that view and copy their bytes
        self._empty, self._uint8, self._narrow = torch.empty, torch.uint8, base.narrow
        self._as_bytes, self._copy_into = base.view, base.copy_
        # an output with torch's lazy negation or conjugation bit: its memory is not its values
        self._is_neg, self._is_conj = base.is_neg, base.is_conj
        self._resolve_neg, self._resolve_conj = base.resolve_neg, base.resolve_conj
        self._fstat = os.fstat
        self._pinned: dict[int, torch.Tensor] = {}
        self._mmap, self._access_copy, self._addressof = mmap.mmap, mmap.ACCESS_COPY, ctypes.addressof
        self._memcmp = ctypes.CDLL(None).memcmp
        self._memcmp.argtypes, self._memcmp.restype = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t), ctypes.c_int
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
        enter_repository(self.home / place.repo)
        try:
            module = taskspec.import_file(path, "candidate", name=place.module_name(self.home))
            cls = getattr(module, "ModelNew", None)
            if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
                raise Rejection("compile_error", "the candidate defines no `class ModelNew(nn.Module)`")
            self.models = [self._build(cls, inits[0], int(req.get("init_seed", 0)))]
            if len(inits) > 1:  # other constructor arguments: refusing them loudly is allowed (see run)
                try:
                    self.models.append(self._build(cls, inits[1], int(req.get("init_seed", 0))))
                except Exception as exc:  # noqa: BLE001
                    self.varied_refused = f"{type(exc).__name__}: {str(exc)[:200]}"
        except Rejection:
            raise
        except Exception as exc:
            raise Rejection("crashed", f"loading the candidate in a plain process raised {type(exc).__name__}: "
                                       f"{str(exc)[:300]} (the guarded process loaded it: a kernel that behaves "
                                       "differently when it is not observed, or one that ignores or refuses "
                                       "other constructor arguments)") from exc
        return {"ok": True, "models": len(self.models)}

    def _storage_ptr(self, tensor: torch.Tensor) -> int:
        return int(self._storage_data_ptr(self._untyped_storage(tensor)))

    def _build(self, cls: type, init: dict[str, Any], seed: int) -> torch.nn.Module:
        seed_construction(seed)
        model = cls(*list(init["init_inputs"]))
        with torch.no_grad():
            hand_over_state(model, dict(init["tables"]))
        return model.to(self.device)

    def run(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """The parent's calls in its order; ``req["calls"]``: ``{"name", "input", "autograd", "training", "grads",
        "varied_init", "judged"}`` (``input`` indexes ``fds``; ``varied_init``: the second model's call; ``grads``:
        the trainable parameters' ``.grad`` filled, as after a training step). ``forward`` is called as KernelEvo's
        dispatcher calls it (the bound method: no module hooks). A judged call's outputs are written raw to
        ``outbox/<name>.raw`` and kept alive, as a program may keep them; after the last call each is compared with
        that file (:meth:`_unchanged`: an output changed since it was returned is refused). An output in the memory
        of a kept one is refused at once."""
        if not self.models:
            raise taskspec.TaskError("run before load")
        phases = dict.fromkeys(("load_inputs_s", "stage_s", "forward_s", "hand_over_s", "end_s"), 0.0)
        mark = self._clock()

        def lap(phase: str) -> None:  # the time since the last lap, added to ``phase``
            nonlocal mark
            now = self._clock()
            phases[phase] += now - mark
            mark = now

        inputs = [load_fd(fd) for fd in fds]
        staged = _Staged(inputs, self.device)
        sent: dict[str, Any] = {}
        kept: list[tuple[str, list[torch.Tensor], Any]] = []  # name, outputs, their description at return
        kept_storages: set[int] = set()
        lap("load_inputs_s")
        for k, call in enumerate(req["calls"]):
            where = f"plain call {k + 1}"
            patch = call.get("patch")
            values = staged.fresh(int(call["input"]), None if patch is None else int(patch))
            lap("stage_s")
            mode = self._modes.get(str(call.get("autograd", "no_grad")), torch.no_grad)
            varied = bool(call.get("varied_init"))
            if varied and (self.varied_refused or len(self.models) < 2):
                continue  # it refused the other arguments: not judged (the dispatcher pins the verified ones)
            model = self.models[-1] if varied else self.models[0]
            if call.get("step") is not None:  # an optimizer step between two calls, as the parent asks
                self._step(self.models[0], inputs[int(call["step"])])
            try:
                self._train(model, bool(call.get("training")))
                self._fill_grads(model, bool(call.get("grads")))
                with mode():
                    raw = model.forward(*values)
                outs = output_list(raw, where)
                if call.get("judged", True):
                    self._synchronize()
            except Rejection:
                raise
            except Exception as exc:
                if varied:  # a loud refusal of other constructor arguments, not a wrong answer
                    self.varied_refused = f"{type(exc).__name__}: {str(exc)[:200]}"
                    continue
                raise Rejection("crashed", f"{where} raised {type(exc).__name__}: {str(exc)[:300]} (the same "
                                           "inputs passed in the guarded process: a kernel that behaves "
                                           "differently when it is not observed)") from exc
            lap("forward_s")
            for j, out in enumerate(outs):
                if type(out) is self._tensor and self._storage_ptr(out) in kept_storages:
                    raise Rejection("incorrect", f"{where}: output {j} is in the memory of an output an earlier call "
                                                 "returned, which a program may still hold (it would now show this "
                                                 "call's values): return new tensors")
            if call.get("judged", True):
                name = str(call["name"])
                sent[name] = self._hand_over(outs, self.outbox / f"{name}.raw", where)
                kept.append((name, outs, sent[name]["raw"]))
                kept_storages.update(self._storage_ptr(o) for o in outs if self._numel(o))
            del raw, outs
            lap("hand_over_s")
        self._synchronize()
        for name, outs, described in kept:
            self._unchanged(outs, described, self.outbox / f"{name}.raw", f"{name} after the last call")
        lap("end_s")
        return {"ok": True, "sent": sent, "varied_refused": self.varied_refused,
                "phases": {key: round(value, 3) for key, value in phases.items()}}

    def _step(self, model: torch.nn.Module, deltas: dict[str, torch.Tensor]) -> None:
        """Add the reference's changes to ``ModelNew``'s parameters of the same names, in place."""
        parameters = dict(model.named_parameters())
        with torch.no_grad():
            for name, delta in deltas.items():
                parameter = parameters.get(name)
                if parameter is not None and parameter.shape == delta.shape:
                    parameter.add_(delta.to(parameter.device, parameter.dtype))

    def _fill_grads(self, model: torch.nn.Module, filled: bool) -> None:
        """The trainable parameters' ``.grad``: random values as a training step leaves them, or none."""
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.requires_grad:
                    parameter.grad = torch.randn_like(parameter) if filled else None

    def _hand_over(self, outs: list[Any], path: Path, where: str) -> dict[str, Any]:
        """Write ``outs`` back to back as raw bytes; only bound C functions run on them (see the module docstring):
        a host tensor's bytes are read from its memory directly, not through torch's dispatcher."""
        described, chunks = self._host_bytes(outs, where)
        fd = self._open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            for _host, chunk in chunks:  # the host tensor kept alive while its memory is written
                data = self._view(chunk).cast("B")
                while len(data):
                    written = self._write(fd, data[:MAX_WRITE])
                    data = data[written:]
        finally:
            self._close(fd)
        return {"raw": described}

    def _unchanged(self, outs: list[Any], described: Any, path: Path, where: str) -> None:
        """Refuse kept outputs that are no longer what forward returned: another dtype or shape than ``described``
        then (emptied with ``set_``, ``resize_``d), or other bytes than :meth:`_hand_over` wrote to ``path`` then
        (compared here, byte for byte, by the C library's ``memcmp`` bound before the candidate existed, against a
        private mapping of that file: the judged bytes, not read through anything the candidate could have
        replaced)."""
        now, chunks = self._host_bytes(outs, where)
        if now != described:
            raise _changed(where, "its outputs' dtypes or shapes are not the ones it returned")
        total = sum(len(chunk) for _host, chunk in chunks)
        fd = self._open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            if self._fstat(fd).st_size != total:
                raise _changed(where, "its outputs' sizes are not the ones it returned")
            if not total:
                return
            mapped = self._mmap(fd, 0, access=self._access_copy)  # copy on write: a buffer ctypes can address
        finally:
            self._close(fd)
        written = self._bytes_at(total).from_buffer(mapped)  # holds an export of the mapping until deleted
        offset, differs = 0, None
        for k, (_host, chunk) in enumerate(chunks):
            if self._memcmp(self._addressof(written) + offset, self._addressof(chunk), len(chunk)):
                differs = k
                break
            offset += len(chunk)
        del written
        mapped.close()
        if differs is not None:
            raise _changed(where, f"output {differs} no longer holds what forward returned")

    def _host_bytes(self, outs: list[Any], where: str) -> tuple[list[dict[str, Any]], list[tuple[Any, Any]]]:
        """Each output's description and its bytes on the host (a ctypes view of a contiguous host tensor, kept
        beside it so that its memory stays alive), read with bound C functions only."""
        if (self._function_modes is not None and self._function_modes()) or \
                (self._dispatch_modes is not None and self._dispatch_modes()):
            raise Rejection("cheat_suspected", f"{where}: forward left a torch function or dispatch mode pushed "
                                               "(it would run the candidate's code while its outputs are read)")
        described, chunks = [], []
        for k, out in enumerate(outs):
            if type(out) is not self._tensor or self._is_sparse(out) or self._layout_of(out) != self._strided:
                raise Rejection("cheat_suspected", f"{where}: output {k} is not a plain strided torch.Tensor")
            if self._is_neg(out) or self._is_conj(out):  # its memory holds values of the other sign (or conjugate)
                out = self._resolve_conj(self._resolve_neg(out))  # the values a program reads
            described.append({"dtype": str(self._dtype_of(out)).removeprefix("torch."),
                              "shape": [int(n) for n in self._shape_of(out)]})
            size = self._numel(out) * self._element_size(out)
            if not size:
                continue
            if self._is_cpu(out):
                host = out if self._is_contiguous(out) else self._contiguous(out)
            else:  # its bytes, copied into this output position's pinned buffer (fast, and no fresh pages each time)
                host = self._pinned_buffer(k, size)
                self._copy_into(host, self._as_bytes(self._reshape(self._detach(out), (-1,)), self._uint8))
            chunks.append((host, self._bytes_at(size).from_address(self._data_ptr(host))))
        return described, chunks

    def _pinned_buffer(self, k: int, size: int) -> torch.Tensor:
        """Page-locked host memory of exactly ``size`` bytes for output position ``k`` (grown as needed, reused:
        every write of an output finishes before the next output is copied there)."""
        buffer = self._pinned.get(k)
        if buffer is None or self._numel(buffer) < size:
            buffer = self._empty((max(size, 1 << 20),), dtype=self._uint8, pin_memory=True)
            self._pinned[k] = buffer
        return self._narrow(buffer, 0, 0, size)


def _changed(where: str, what: str) -> Rejection:
    return Rejection("incorrect", f"{where}: {what} (a later call changed it: a kernel still writing it, or memory "
                                  "reused as scratch); a program may keep its outputs: leave them as returned")


class _Staged:
    """The input sets on the device, each copied there once (up to a quarter of the device's free memory; the
    rest from host memory per call); ``fresh(i, p)``: set ``i`` (with near-duplicate patches ``p`` applied) as a
    program makes its tensors, on the device, contiguous, each in memory of its own (a copy per call: a kernel never
    sees the same buffer twice)."""

    def __init__(self, inputs: list[Any], device: str):
        self.inputs, self.device = inputs, device
        self.on_device: dict[int, list[Any]] = {}
        self.room = 0
        if device == "cuda":
            free, _total = torch.cuda.mem_get_info()
            self.room = free // 4

    def fresh(self, index: int, patch: int | None = None) -> list[Any]:
        values = self.on_device.get(index)
        if values is None:
            values = [v.to(self.device).contiguous() if isinstance(v, torch.Tensor) else v
                      for v in self.inputs[index]]
            size = sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))
            if self.device == "cuda" and size <= self.room:
                self.on_device[index], self.room = values, self.room - size
        patches: Patches = self.inputs[patch] if patch is not None else [None] * len(values)
        own = [v.clone() if isinstance(v, torch.Tensor) and p is None else v for v, p in zip(values, patches)]
        return apply_patches(own, patches)
