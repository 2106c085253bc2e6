"""Integer outputs reproduce PyTorch's arithmetic bit for bit (issue #13): quantisers written the ways models write
them, fed rows built to land on rounding ties (``x / scale`` exactly ``k + 0.5``) and next to them, compared with
``torch.equal`` in every strategy that fits. The kernels divide where PyTorch divides (IEEE, in the same order),
multiply where it multiplies, and round half to even."""

from __future__ import annotations

import textwrap

from test_offline_dropin import LOADER, _interpreted

_TIES = LOADER + textwrap.dedent('''
    from kernelevo.search.offline import OfflineProposer
    from kernelevo.search.offline.module import generate
    from kernelevo.search.offline.trace import trace_task

    HEAD = "import torch\\nfrom torch import nn\\n\\n\\nclass Model(nn.Module):\\n    def forward(self, x):\\n"
    TAIL = "\\n\\ndef get_init_inputs():\\n    return []\\n\\n\\ndef get_inputs():\\n    return [torch.randn(8, 64)]\\n"
    BODIES = {
        # the bench op: scale = amax / 127 (a division by a Python number), q = round(x / scale)
        "divide": """        xf = x.float()
            scale = xf.abs().amax(dim=-1, keepdim=True).clamp(min=1e-8) / 127.0
            return torch.round(xf / scale).clamp(-127, 127).to(torch.int8), scale""",
        # a reciprocal multiplied in: 127 / amax, then x * that
        "reciprocal": """        inv = 127.0 / x.abs().amax(dim=-1, keepdim=True).clamp(min=1e-8)
            return torch.round(x * inv).clamp(-127, 127).to(torch.int8)""",
        # asymmetric uint8 with a zero point
        "zero_point": """        lo, hi = x.amin(dim=-1, keepdim=True), x.amax(dim=-1, keepdim=True)
            scale = ((hi - lo) / 255.0).clamp(min=1e-8)
            zp = torch.round(-lo / scale)
            return torch.clamp(torch.round(x / scale) + zp, 0, 255).to(torch.uint8)""",
    }

    def rows(cols):
        """Rows whose quantised values sit on ties and next to them: amax is 127 * step, the others (k + 0.5) * step
        (exact ties for a power-of-two step, near ties for the others), their neighbours one ulp away, and noise."""
        torch.manual_seed(0)
        out = []
        for step in (0.125, 0.1, 1.0 / 3.0, 0.7, 2.0 ** -10, 3.3):
            k = torch.randint(-126, 126, (cols,)).float()
            row = (k + 0.5) * step
            row[1::4] = torch.nextafter(row[1::4], torch.full_like(row[1::4], float("inf")))
            row[2::4] = torch.nextafter(row[2::4], torch.full_like(row[2::4], float("-inf")))
            row[0], row[-1] = 127.0 * step, -126.75 * step
            out.append(row)
        out.append(torch.randn(cols) * 3)
        return torch.stack(out)

    proposer = OfflineProposer()
    for name, body in BODIES.items():
        source = HEAD + "\\n".join("        " + line.strip() for line in body.splitlines()) + TAIL
        with open(f"ref_{name}.py", "w") as f:
            f.write(source)
        ref = load(f"ref_{name}").Model()
        traced = trace_task(source)
        for strategy in proposer.strategies(source):
            with open(f"cand_{name}.py", "w") as f:
                f.write(generate(traced, strategy, name))
            model = load(f"cand_{name}").ModelNew()
            for cols in (64, 301):
                x = rows(cols)
                want, got = ref(x), model(x)
                want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
                q_want, q_got = want[0], got[0]
                assert q_got.dtype == q_want.dtype, (name, strategy, q_got.dtype)
                diff = (q_got.to(torch.int32) != q_want.to(torch.int32)).sum().item()
                assert diff == 0, f"{name} / {strategy} / {cols} cols: {diff} integers differ"
                for a, b in zip(got[1:], want[1:]):
                    assert torch.equal(a, b), (name, strategy, "scale")
    print("ok")
''')


def test_quantised_integers_are_pytorchs_on_rounding_ties(tmp_path):
    _interpreted(_TIES, tmp_path)
