"""A causal softmax never reads the masked half of its scores: the kernel's loads of the scores are masked by
the causal predicate (the row's query position against the column), so the lanes the mask replaces by -inf are
not loaded. Checked on the generated source and by counting the lanes the interpreter actually loads."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from test_offline_dropin import _interpreted
from test_offline_indexing import CAUSAL_ARANGE, CAUSAL_TRIL

from kernelevo.search.offline import OfflineProposer
from kernelevo.search.offline.module import generate
from kernelevo.search.offline.trace import trace_task

ROOT = Path(__file__).resolve().parents[2]
BENCH = (ROOT / "bench" / "ops" / "causal_softmax.py").read_text()


@pytest.mark.parametrize("name,source", [("bench", BENCH), ("arange", CAUSAL_ARANGE), ("tril", CAUSAL_TRIL)])
def test_every_load_of_the_scores_is_masked_by_the_causal_predicate(name, source):
    traced = trace_task(source)
    for strategy in OfflineProposer().strategies(source):
        kernel = generate(traced, strategy, "causal").split("@triton.jit", 1)[1].split("class ModelNew")[0]
        loads = re.findall(r"tl\.load\(scores_row [^\n]*", kernel)
        assert loads, kernel
        for load in loads:
            guard = re.search(r"mask=mask & (\(?\w+[^,]*), other", load)
            assert guard, f"{strategy}: {load}"
            predicate = re.search(r"\w+", guard.group(1)).group(0)
            assert re.search(rf"\n\s+{predicate} = ", kernel.split(load)[0]), (strategy, predicate)  # defined first
        assert re.search(r"\(i\d >= cols\)|\(cols - i\d\)", kernel), kernel  # the query position vs the column


_COUNT_LOADED = textwrap.dedent("""
    import importlib.util
    import numpy as np
    import torch
    from triton.runtime import interpreter

    spec = importlib.util.spec_from_file_location("cand", "cand.py")
    cand = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cand)
    batch, s = 3, 33
    scores = torch.randn(batch, s, s)
    start, end = scores.data_ptr(), scores.data_ptr() + scores.numel() * scores.element_size()
    loaded = []
    builder = interpreter.interpreter_builder
    original = builder.create_masked_load

    def counted(ptrs, mask, *rest, **kwargs):
        addresses = np.asarray(ptrs.data, dtype=np.uint64).astype(np.int64)
        active = np.broadcast_to(np.asarray(mask.data, dtype=bool), addresses.shape)
        inside = (addresses >= start) & (addresses < end)
        loaded.append(int((active & inside).sum()))
        return original(ptrs, mask, *rest, **kwargs)

    builder.create_masked_load = counted
    out = cand.ModelNew()(scores)
    keep = torch.ones(s, s, dtype=torch.bool).tril()
    torch.testing.assert_close(out, torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1))
    passes = PASSES
    assert sum(loaded) == passes * batch * s * (s + 1) // 2, (sum(loaded), passes * batch * s * s)
    print("ok")
""")


@pytest.mark.parametrize("strategy,passes", [("rowwise-1pass", 1), ("rowwise-looped", 2)])
def test_the_interpreter_loads_only_the_causal_half(strategy, passes, tmp_path):
    params = {"BLOCK_COLS": 16} if strategy == "rowwise-looped" else None  # several column blocks per row
    (tmp_path / "cand.py").write_text(generate(trace_task(CAUSAL_TRIL), strategy, "causal", params))
    _interpreted(_COUNT_LOADED.replace("PASSES", str(passes)), tmp_path)
