# head: swiglu


class _Launcher:
    def __init__(self, block):
        self.block = block

    def __call__(self, x):
        return swiglu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.impls = {"triton": _Launcher(1024)}
        self.backend = "triton"

    def forward(self, x):
        return self.impls[self.backend](x)
