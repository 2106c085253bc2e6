"""The candidate process: imports one candidate under guard and runs the calls the parent asks for.

Hostile by assumption: this process holds nothing the verdict depends on. It never imports the task and
never learns a seed: the reference model's weights and constructor arguments, and every input, arrive as
file descriptors opened by the parent (``SCM_RIGHTS``) with the request that needs them, so no input
exists in this process (or its filesystem) while the candidate is imported. The parent plans the calls
(which inputs, which reuse the same storage, which sit in guard regions or run with poisoned allocations,
in a secret order among many); every output is written to this process's outbox under a name the parent
chose, and the reference process judges it. The guards here (op recorder, audit hook, launch counter,
host conversions, attribute snapshot, threads, bounds on CPU) can only add reasons to reject.

Everything the harness calls after the candidate is imported is bound in :class:`CandidateRunner`'s
constructor (before the import) and never looked up through module attributes again; the allow-lists it
holds are frozen.
"""

from __future__ import annotations

import inspect
import os
import time
from pathlib import Path
from typing import Any

import torch

from evaluator import placement
from evaluator.import_policy import RUNTIME_IMPORT_ROOTS as ALLOWED_IMPORT_ROOTS
from evaluator.sandboxed import guards, handoff, taskspec
from evaluator.sandboxed.bounds import BoundsChecker
from evaluator.sandboxed.loading import hand_over_state, load_fd, seed_construction
from evaluator.sandboxed.output_checks import Rejection, output_list, require_no_alias, same_bits
from evaluator.tracing import client as trace_client
from evaluator.tracing import tags


class CandidateRunner:
    """Serves ``handoff_probe`` (harness only, before anything of a candidate exists), ``load``, ``check``,
    ``time``, ``save_kept`` and ``compile`` requests for one candidate."""

    def __init__(self, private: Path, device: str, scratch: Path | None = None):
        self.private, self.device = Path(private), device
        self.scratch = scratch  # the sandbox's own /tmp (None without a sandbox: the host's /tmp is not ours)
        self.outbox = self.private / "outbox"
        # The neutral home the parent bound this process's private home at (its private home without a sandbox),
        # read before any candidate exists; the candidate's module lives under it (evaluator.placement).
        self.home = Path(os.environ.get("HOME") or self.private / "home")
        self.candidate_path = self.home / "unplaced.py"  # load and compile name the candidate's place
        self.module_name: str | None = None
        self.model: torch.nn.Module | None = None
        self.live: dict[int, list[Any]] = {}  # case -> the tensors later calls of that case are written into
        self.kept_outputs: list[torch.Tensor] = []
        self.small_ops: set[str] = set()  # torch ops forward ran on small tensors (bookkeeping; reported)
        self.bounds = BoundsChecker()
        self.launches = guards.LaunchCounter()
        self.allow_ops: tuple[str, ...] = ()
        self.own_ops: frozenset[str] = frozenset()
        self.own_bodies = guards.OwnOpBodies()
        self.expected: dict[int, list[dict[str, Any]]] = {}
        # Bound before the candidate exists (see the module docstring).
        self._no_grad, self._torch_save = torch.no_grad, torch.save
        # The states a user's program calls forward in (evaluator.callplan draws one per call).
        self._autograd_modes = {"no_grad": torch.no_grad, "grad": torch.enable_grad,
                                "inference": torch.inference_mode}
        self._train, self._set_requires_grad = torch.nn.Module.train, torch.Tensor.requires_grad_
        self._trainable: list[torch.Tensor] = []  # ModelNew's parameters that require grad (frozen on some calls)
        self._deterministic, self._set_deterministic = (torch.are_deterministic_algorithms_enabled,
                                                        torch.use_deterministic_algorithms)
        self._synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        self._perf = time.perf_counter
        self._recorder_cls = guards.OpRecorder
        self._bookkeeping_elements = guards.bookkeeping_elements
        self._guarded_copy, self._guards_intact = taskspec.guarded_copy, taskspec.guards_intact
        self._require_no_alias, self._same_bits, self._output_list = require_no_alias, same_bits, output_list
        self._snapshot, self._changed = guards.snapshot_attributes, guards.changed_attributes
        self._threads, self._poison = guards.live_threads, guards.poison_allocator
        self._outbox_cls = handoff.Outbox
        self._tensor_type = torch.Tensor
        self.sent = handoff.Outbox(0, "file")
        self._send_fds = handoff.fd_sender(0)  # outputs' VMM descriptors go to the parent on the request socket
        self._vmm_unavailable: str | None = None
        if device == "cuda":  # the driver binding imported, the device asked, before any candidate code exists
            from evaluator.sandboxed import vmm

            self._vmm_unavailable = vmm.warm_up(torch.cuda.current_device())
        # The kernel trace (GPU): the preloaded shim's entry points, bound now; inert where it is not loaded.
        self._tracer = trace_client.bind(None)
        self._mark_tag = tags.mark_tag
        self._forward_kind, self._trial_kind = tags.WindowKind.FORWARD, tags.WindowKind.TRIAL
        self._begin, self._end = tags.Edge.BEGIN, tags.Edge.END
        self._current_stream = torch.cuda.current_stream if device == "cuda" else None
        self.forward_windows = 0  # forward calls marked so far (the parent expects exactly its own count)

    # -- the session's hand-off probe ------------------------------------------------------------
    def handoff_probe(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Hand one tensor of the parent's making over the way outputs go (see :mod:`evaluator.handoff_probe`).
        Served only by a process that has loaded nothing: afterwards its answers are the candidate's."""
        if self._candidate_seen:
            return {"ok": False, "kind": "protocol", "message": "handoff_probe after a candidate was loaded"}
        self._open_outbox({"key": req.get("key", 0), "mode": "vmm"})
        probe = handoff.probe_tensor(int(req["seed"]), int(req["nbytes"]), self.device)
        sent = self.sent.send([probe], self.outbox / "probe.pt", "the hand-off probe")
        return self._hand_over_fds({"ok": True, "sent": {"probe": sent}, "export_failed": self.sent.export_failed})

    _candidate_seen = False  # set before the first byte of a candidate is imported (load, compile)

    # -- load -------------------------------------------------------------------------------------
    def load(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Install the guards, import the candidate, build ``ModelNew`` with the reference's weights.
        ``fds[0]``: the reference's ``{"init_inputs": [...], "state": {...}}``."""
        if len(fds) != 1:
            raise taskspec.TaskError("load: expected one file descriptor (the reference model's state)")
        self._candidate_seen = True
        self._locate_candidate(req)
        phases: dict[str, float] = {}
        clock = self._perf()

        def lap(name: str) -> None:
            nonlocal clock
            now = self._perf()
            phases[name] = round(now - clock, 3)
            clock = now

        init = load_fd(fds[0])
        init_inputs, reference_tables = list(init["init_inputs"]), dict(init["tables"])
        lap("init_file_s")
        self.allow_ops = tuple(req.get("allow_ops", ()))
        # the candidate's own torch.library ops (found statically): calling them is launching its kernels
        self.own_ops = frozenset(str(op) for op in req.get("own_ops", ()) if "::" in str(op))
        self.expected = {int(c["case"]): c["outputs"] for c in req.get("expected", [])}
        self.launches.install(self.private / "torch_extensions" if self.device == "cuda" else None,
                              interpreted=self.device == "cpu")
        if self.device == "cpu":
            self.bounds.install()
        lap("launch_guards_s")
        candidate_path = self.candidate_path
        self.audit = guards.AuditGuard(candidate_path, ALLOWED_IMPORT_ROOTS, scratch=self.scratch)
        self.host = guards.HostConversionGuard(self.audit)
        if req.get("runtime_guards", True):
            self.audit.install()
            lap("audit_s")
            self.host.install()
            lap("host_guard_s")
            self.own_bodies.install()
            lap("own_bodies_s")
        self.attrs_before = self._snapshot()
        self.threads_before = self._threads()
        lap("snapshot_s")

        module = self._guarded_import(candidate_path)
        self._check_guards("import")
        lap("import_s")
        cls = getattr(module, "ModelNew", None)
        if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
            raise Rejection("compile_error", "the candidate defines no `class ModelNew(nn.Module)`; define it with the "
                                             "same constructor arguments and forward signature as the task's Model")
        self._guarded(lambda: _check_signature(cls, req.get("forward_arities") or [], req.get("model_forward", "")),
                      "reading forward's signature", candidate_path,
                      failure="reading ModelNew.forward's signature raised")
        seed_construction(int(req.get("init_seed", 0)))
        model = self._guarded(lambda: cls(*init_inputs), "construction", candidate_path,
                              failure="ModelNew(*get_init_inputs()) raised")
        lap("construct_s")

        def copy_reference_state() -> None:  # walks the candidate's modules: guarded like construction
            with self._no_grad():
                hand_over_state(model, reference_tables)

        self._guarded(copy_reference_state, "handing over the reference's weights", candidate_path,
                      failure="handing ModelNew the reference's weights raised")
        self.model = model  # moved to the device by the first check: a prefetched load touches no GPU memory
        self._check_guards("construction")
        lap("weights_s")
        return {"ok": True, "phases": phases}

    def compile(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Import the candidate under guard only (its builds made, no model built): a process that has had a
        candidate, for the protocol's tests."""
        self._candidate_seen = True
        self._locate_candidate(req)
        self.launches.install(self.private / "torch_extensions")
        self.audit = guards.AuditGuard(self.candidate_path, ALLOWED_IMPORT_ROOTS, scratch=self.scratch)
        self.audit.install()
        try:
            self._guarded_import(self.candidate_path)
        except Rejection as exc:
            return {"ok": True, "compiled": False, "message": str(exc)}
        return {"ok": True, "compiled": True}

    def _locate_candidate(self, req: dict[str, Any]) -> None:
        """Where the candidate's module is and the name it is imported under: where and how the kernel will be in
        the user's repository (:mod:`evaluator.placement`); the parent wrote it there."""
        try:
            place = placement.from_request(req.get("module"))
        except ValueError as exc:
            raise taskspec.TaskError(f"{req.get('op')}: {exc}") from None
        self.candidate_path = self.home / place.relative
        self.module_name = place.module_name(self.home)

    def _guarded_import(self, path: Path) -> Any:
        """Import the candidate module with the guards active; failures are compile errors."""
        self.audit.active = True
        try:
            return taskspec.import_file(path, "candidate", name=self.module_name)
        except SyntaxError as exc:
            raise Rejection("compile_error", f"{path.name}:{exc.lineno}: syntax error: {exc.msg}") from exc
        except Exception as exc:
            if self.audit.violations:  # the import failed because a guard refused something
                raise Rejection("cheat_suspected", f"during import: refused {self.audit.violations[0]}") from exc
            raise Rejection("compile_error", f"importing the candidate raised {type(exc).__name__}: "
                                             f"{_first_line(exc)}{_line_in(exc, path)}") from exc
        finally:
            self.audit.active = False

    def _guarded(self, fn: Any, where: str, path: Path, failure: str) -> Any:
        """Run candidate code (construction, ``.to(device)``) with the audit hook and the op recorder on."""
        recorder = self._recorder_cls(self.allow_ops, own_ops=self.own_ops)
        self.audit.active = True
        try:
            with recorder:
                return fn()
        except PermissionError as exc:
            what = self.audit.violations[0] if self.audit.violations else str(exc)
            raise Rejection("cheat_suspected", f"during {where}: refused {what}") from exc
        except Rejection:
            raise
        except Exception as exc:
            raise Rejection("compile_error", f"{failure} {type(exc).__name__}: {_first_line(exc)}"
                                             f"{_line_in(exc, path)}") from exc
        finally:
            self.audit.active = False
            # construction may precompute with torch (weights, tables): that is not the forward path
            self.construction_ops = list(recorder.violations)

    # -- correctness calls ------------------------------------------------------------------------
    def check(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Run the calls of the parent's plan, in its order; write each output under the name it chose.

        ``req["calls"]``: ``{"name", "input", "case", "storage": "fresh"|"reuse", "guarded", "poison"}``;
        ``input`` indexes ``fds`` (one file per input set: a list of values)."""
        assert self.model is not None
        clock = self._perf()
        inputs = [load_fd(fd) for fd in fds]
        phases = {"load_inputs_s": self._perf() - clock, "first_call_s": 0.0, "calls_s": 0.0, "handoff_s": 0.0,
                  "place_s": 0.0}  # first call: JIT compiles land there
        if not self._moved:
            clock = self._perf()
            self._to_device()
            phases["to_device_s"] = self._perf() - clock
        self._open_outbox(req)
        sent: dict[str, dict[str, Any]] = {}
        for k, call in enumerate(req["calls"]):
            case = int(call["case"])
            values = inputs[int(call["input"])]
            clock = self._perf()
            live = self._place(case, values, call.get("storage") == "reuse", bool(call.get("guarded")))
            phases["place_s"] += self._perf() - clock
            clock = self._perf()
            outs = self._guarded_call(live, case, where=f"call {k + 1} (case {case})", poison=bool(call.get("poison")),
                                      autograd=str(call.get("autograd", "no_grad")),
                                      training=bool(call.get("training")), input_grad=bool(call.get("input_grad")),
                                      inference_inputs=bool(call.get("inference_inputs")),
                                      frozen=bool(call.get("frozen")), guarded=bool(call.get("guarded")))
            phases["first_call_s" if k == 0 else "calls_s"] += self._perf() - clock
            clock = self._perf()
            sent[call["name"]] = self.sent.send(outs, self.outbox / f"{call['name']}.pt", f"call {k + 1} (case {case})")
            phases["handoff_s"] += self._perf() - clock
        self._require_outputs_left_alone()
        clock = self._perf()
        trace_seq = self._tracer.flush()
        phases["trace_flush_s"] = self._perf() - clock
        reply = {"ok": True, "calls": len(req["calls"]), "sent": sent, "resources": self.launches.resources,
                 "phases": {k: round(v, 3) for k, v in phases.items()}, "small_torch_ops": sorted(self.small_ops),
                 "interpreter_bf16_arithmetic": self.bounds.bf16_arithmetic, "trace_seq": trace_seq,
                 "export_failed": self.sent.export_failed}
        return self._hand_over_fds(reply)

    def _hand_over_fds(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Send the descriptors of the outputs exported in this phase (before the reply, which declares them)."""
        fds = self.sent.take_fds()
        try:
            if fds:
                self._send_fds(fds)
        finally:
            for fd in fds:
                os.close(fd)
        reply["nfds"] = len(fds)
        return reply

    def _open_outbox(self, req: dict[str, Any]) -> None:
        """One outbox per evaluation (its fingerprint key is the parent's): outputs of every phase stay checked."""
        key, mode = int(req.get("key", 0)), str(req.get("mode", "file"))
        self.sent.release_exports()  # the parent asks for a phase only once the reference judged the one before
        if self.sent.key != key or not key:
            self.sent = self._outbox_cls(key, mode)
        elif self.sent.export_failed is None:
            self.sent.mode = mode
        if self.sent.mode == "vmm" and self._vmm_unavailable:
            self.sent.export_failed, self.sent.mode = self._vmm_unavailable, "file"

    _moved = False

    def _to_device(self) -> None:
        """``model.to(device)`` runs the candidate's own code (an overridden ``_apply``): guarded like forward."""
        model = self.model
        assert model is not None
        self.model = self._guarded(lambda: model.to(self.device), "model.to(device)",
                                   self.candidate_path, failure="model.to(device) raised")
        moved = self.model  # after the move: an overridden _apply may have replaced the parameters
        self._trainable = self._guarded(lambda: [p for p in moved.parameters() if p.requires_grad],
                                        "listing ModelNew's parameters", self.candidate_path,
                                        failure="ModelNew.parameters() raised")
        self._moved = True
        self._check_guards("model.to(device)")

    def _place(self, case: int, values: list[Any], reuse: bool, guarded: bool) -> list[Any]:
        """The call's arguments on the device: written into the storage the previous call of this case used
        (``reuse``: a result cache keyed by pointer now returns stale answers), or fresh — inside sentinel
        guard regions (``guarded``) or as plain tensors a user's program would pass."""
        live = self.live.get(case)
        if reuse and live is not None and len(live) == len(values):
            placed = []
            for dst, src in zip(live, values):
                if isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor) and dst.shape == src.shape \
                        and dst.dtype == src.dtype:
                    dst.copy_(src)
                    placed.append(dst)
                else:
                    placed.append(self._fresh(src, guarded))
        else:
            placed = [self._fresh(v, guarded) for v in values]
        self.live[case] = placed
        return placed

    def _fresh(self, value: Any, guarded: bool) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        return self._guarded_copy(value, self.device) if guarded else value.to(self.device).contiguous().clone()

    def mark(self, kind: Any, edge: Any, index: int) -> None:
        """A window edge in the kernel trace, on the stream the harness launches on (no-op without the shim)."""
        stream = self._current_stream().cuda_stream if self._current_stream is not None else 0
        self._tracer.mark(self._mark_tag(kind, edge, index), stream)

    def save_kept(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Outputs sent earlier as VMM allocations, written as files instead (the reference could not map them)."""
        for item in req["outputs"]:
            self.sent.save_kept(int(item["kept"]), Path(item["path"]))
        return {"ok": True}

    def _guarded_call(self, inputs: list[Any], case: int, where: str, poison: bool = True, record: bool = True,
                      autograd: str = "no_grad", training: bool = False, input_grad: bool = False,
                      inference_inputs: bool = False, frozen: bool = False,
                      guarded: bool = False) -> list[torch.Tensor]:
        """One call of forward under every guard, in the state the plan drew for it (see evaluator.callplan): an
        autograd mode, the module's training flag, whether its parameters require grad (``frozen``: not), the
        floating inputs as non-leaf views requiring grad (``input_grad``, as a training step passes activations) or
        as inference tensors (``inference_inputs``: copies made inside inference_mode, as a program serving a model
        there passes them; the inputs are then these copies, and they too must come back unchanged)."""
        assert self.model is not None
        before = [x.clone() if isinstance(x, torch.Tensor) else None for x in inputs]
        if poison:
            self._poison(self.device, sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor)))
        launches, programs = self.launches.count, self.launches.programs
        small = self._bookkeeping_elements(inputs)
        recorder = self._recorder_cls(self.allow_ops, own_ops=self.own_ops, small_elements=small)
        deterministic = self._deterministic()
        self._set_deterministic(poison, warn_only=True)  # poison: torch.empty returns NaN-filled memory
        window = self.forward_windows
        self.forward_windows += 1
        self._synchronize()
        self.mark(self._forward_kind, self._begin, window)
        self.audit.active = True
        self.own_bodies.active[0] = recorder
        args = [x.detach().requires_grad_(True).view_as(x)  # made with gradients on: a grad_fn, as a step's activation
                if input_grad and isinstance(x, self._tensor_type) and x.is_floating_point() else x for x in inputs]
        try:
            with self._autograd_modes.get(autograd, self._no_grad)(), recorder:
                self._train(self.model, training)
                for parameter in self._trainable:
                    self._set_requires_grad(parameter, not frozen)
                if inference_inputs:  # copies made here are inference tensors (inside guard regions if guarded)
                    args = [(self._guarded_copy(x, self.device) if guarded else x.clone())
                            if isinstance(x, self._tensor_type) else x for x in inputs]
                raw = self.model(*args)
            self._synchronize()
            self.mark(self._forward_kind, self._end, window)
        except PermissionError as exc:
            found = self.audit.violations
            more = f"; {len(found) - 1} more refused after it" if len(found) > 1 else ""
            refused = f" (first refused: {found[0]}{more})" if found else ""
            raise Rejection("cheat_suspected", f"{where}: {exc}{refused}") from exc
        except Rejection:
            raise
        except Exception as exc:
            self._check_bounds(where)  # an access refused by the bounds checks stops the launch with an error
            limit = interpreter_limit(exc) if self.device == "cpu" else None
            if limit:
                raise Rejection("needs_gpu", f"{where}: the CPU's Triton interpreter cannot run this kernel ({limit}); "
                                             "evaluate it with --device cuda") from exc
            unsupported = triton_unsupported(exc)
            if unsupported:
                raise Rejection("compile_error", f"{where}: the installed Triton cannot build this kernel: "
                                                 f"{unsupported[:300]} (use an API this Triton version has)") from exc
            raise Rejection("crashed", f"forward raised {type(exc).__name__} on {where}: {_first_line(exc)}"
                                       f"{_line_in(exc, Path(self.audit.candidate_file))}") from exc
        finally:
            self.audit.active = False
            self.own_bodies.active[0] = None
            self._set_deterministic(deterministic)
        self._check_guards(where)
        self._check_bounds(where)
        self.small_ops.update(recorder.small_ops)
        if recorder.violations:
            raise Rejection("cheat_suspected", f"{where}: forward ran torch ops {', '.join(recorder.violations)}; "
                                               "the candidate's own kernels must do the math (allocation, views and "
                                               "dtype casts are fine)")
        if recorder.dispatches > guards.MAX_DISPATCHES_PER_CALL:
            raise Rejection("cheat_suspected", f"{where}: forward made {recorder.dispatches} torch calls (more than "
                                               f"{guards.MAX_DISPATCHES_PER_CALL}): element-by-element host work is "
                                               "not a kernel; let the kernels loop")
        if not self.launches.work_since(launches, programs):
            raise Rejection("cheat_suspected", f"{where}: forward launched no kernel that did any work (a launch on "
                                               "an empty grid runs nothing)")
        outs = self._output_list(raw, where)
        for k, out in enumerate(outs):
            if type(out) is not self._tensor_type:
                raise Rejection("cheat_suspected", f"{where}: output {k} is a {type(out).__name__}, not a plain "
                                                   "torch.Tensor (tensor subclasses and lazy values are refused)")
            if out.device.type != self.device:
                raise Rejection("incorrect", f"{where}: output {k} is on {out.device}, expected {self.device}")
        self._require_expected_outputs(outs, case, where)
        passed = [*inputs, *args] if inference_inputs else inputs  # the inference copies are what forward got
        self._require_no_alias(outs, passed, self.kept_outputs, where)
        for k, (x, old) in enumerate(zip(passed, [*before, *before] if inference_inputs else before)):
            if old is not None and not self._same_bits(x, old):
                raise Rejection("cheat_suspected", f"{where}: the candidate modified input {k % len(inputs)} in place")
            if not self._guards_intact(x):
                raise Rejection("incorrect", f"{where}: the candidate wrote outside input {k} (out-of-bounds store)")
        self.kept_outputs.extend(outs)
        return outs

    def _check_bounds(self, where: str) -> None:
        if self.bounds.violations:
            raise Rejection("incorrect", f"{where}: {self.bounds.violations[0]}; mask that access to the tensor's own "
                                         "elements (on a GPU it reads another allocation's memory or faults)")

    def time(self, req: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Time the candidate on the rotating timing input sets (CUDA only); ``fds``: one file per set per case."""
        from evaluator.sandboxed.timing_ops import TimedCandidate, candidate_time

        clock = self._perf()
        sets = [load_fd(fd) for fd in fds]
        load_inputs_s = self._perf() - clock
        per_case = int(req["sets_per_case"])
        grouped = [sets[i:i + per_case] for i in range(0, len(sets), per_case)]
        self._open_outbox(req)
        timed = TimedCandidate(model=self.model, launches=self.launches, audit=self.audit, allow_ops=self.allow_ops,
                               own_ops=self.own_ops, outbox=self.sent, outdir=self.outbox,
                               check_guards=self._check_guards, mark=self.mark, trial_kind=self._trial_kind,
                               begin=self._begin, end=self._end)
        reply = candidate_time(timed, grouped, req)
        self._require_outputs_left_alone()
        clock = self._perf()
        reply["trace_seq"] = self._tracer.flush()
        reply["phases"].update(load_inputs_s=round(load_inputs_s, 3), trace_flush_s=round(self._perf() - clock, 3))
        return self._hand_over_fds(reply)

    def _require_outputs_left_alone(self) -> None:
        changed = self.sent.changed_since_sent()
        if changed:
            raise Rejection("cheat_suspected", f"{changed} changed after forward returned it (a kernel kept writing "
                                               "into an output it had already handed back); leave returned tensors "
                                               "alone")

    def _require_expected_outputs(self, outs: list[torch.Tensor], case: int, where: str) -> None:
        expected = self.expected.get(case)
        if expected is None:
            return
        if len(outs) != len(expected):
            raise Rejection("incorrect",
                            f"{where}: forward returned {len(outs)} outputs, the reference {len(expected)}")
        for k, (out, want) in enumerate(zip(outs, expected)):
            if list(out.shape) != want["shape"] or str(out.dtype) != want["dtype"]:
                raise Rejection("incorrect", f"{where}: output {k} is {str(out.dtype)} {list(out.shape)}, expected "
                                             f"{want['dtype']} {want['shape']}")

    def _check_guards(self, where: str) -> None:
        if self.audit.violations:
            raise Rejection("cheat_suspected", f"during {where}: refused {self.audit.violations[0]}")
        if self.host.violations:
            raise Rejection("cheat_suspected", f"during {where}: {self.host.violations[0]} moves tensor data to the "
                                               "host; the kernels must do the math")
        if self.launches.host_arguments:
            raise Rejection("cheat_suspected", f"during {where}: {self.launches.host_arguments[0]}: under the "
                                               "interpreter a Python object in a kernel runs host code over the "
                                               "block's values; hand kernels tensors, numbers, strings, dtypes, jit "
                                               "functions and tuples of them")
        changed = self._changed(self.attrs_before, self._snapshot())
        if changed:
            raise Rejection("cheat_suspected", f"during {where}: the candidate changed {', '.join(changed[:5])}")
        if self._threads() - self.threads_before:
            raise Rejection("cheat_suspected", f"during {where}: the candidate started a thread")
        if self.launches.foreign_stream_launches:
            raise Rejection("cheat_suspected", f"during {where}: {self.launches.foreign_stream_launches} kernel "
                                               "launch(es) went to a CUDA stream other than the one forward was "
                                               "called on (work there escapes the timer); launch on "
                                               "torch.cuda.current_stream() and create no streams")


# What the CPU's Triton interpreter cannot run (GPU-only features), recognised by the error it raises.
_INTERPRETER_LIMITS = (
    ("0 active drivers", "several @triton.autotune configs need a GPU to benchmark"),
    ("libdevice", "libdevice math"),
    ("inline_asm", "inline assembly"),
    ("make_tensor_descriptor", "tensor descriptors"),
    ("TensorDescriptor", "tensor descriptors"),
    ("has no attribute 'to'", "a method call on a scalar argument (a GPU compiles it, the interpreter passes a "
                              "Python number)"),
)


def interpreter_limit(exc: BaseException) -> str | None:
    """Which GPU-only feature an interpreter failure comes from (None: an ordinary failure of the kernel)."""
    chain: list[str] = []
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        chain.append(f"{type(link).__name__}: {link}")
        link = link.__cause__ or link.__context__
    text = " | ".join(chain)
    if "Interpreter" not in text and "active drivers" not in text:
        return None
    return next((why for needle, why in _INTERPRETER_LIMITS if needle in text), None)


def triton_unsupported(exc: BaseException) -> str | None:
    """What the installed Triton says it does not implement (an API a newer release removed, such as block
    pointers in the interpreter), from a failure of Triton's own compiler or interpreter; None otherwise."""
    link: BaseException | None = exc
    seen: set[int] = set()
    under_triton = False
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        under_triton = under_triton or type(link).__module__.startswith("triton.")
        if under_triton and isinstance(link, NotImplementedError):
            return str(link)
        nested = link.args[0] if link.args and isinstance(link.args[0], BaseException) else None
        link = nested or link.__cause__ or link.__context__
    return None


def _check_signature(new_cls: type[torch.nn.Module], arities: list[int], model_forward: str) -> None:
    """ModelNew.forward must accept exactly the argument counts the cases pass (as Model.forward does)."""
    try:
        params = list(inspect.signature(new_cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return
    if not arities or any(p.kind == p.VAR_POSITIONAL for p in params):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if all(len(required) <= n <= len(positional) for n in arities):
        return
    raise Rejection("compile_error", f"ModelNew.forward({', '.join(p.name for p in params)}) cannot take the "
                                     f"{'/'.join(map(str, sorted(set(arities))))} inputs the task passes to "
                                     f"Model.forward({model_forward}); keep the same arguments")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__


def _line_in(exc: BaseException, path: Path) -> str:
    import traceback

    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == path.resolve()]
    return f" (at {path.name}:{frames[-1].lineno})" if frames else ""
