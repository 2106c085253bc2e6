# head: swiglu


class _Launcher:
    def __init__(self, block):
        self.block = block

    def run(self, x):
        return swiglu(x)


_BACKENDS = {"triton": _Launcher(1024)}


class ModelNew(nn.Module):
    def __init__(self, backend: str = "triton"):
        super().__init__()
        self.backend = backend

    def forward(self, x):
        return _BACKENDS[self.backend].run(x)
