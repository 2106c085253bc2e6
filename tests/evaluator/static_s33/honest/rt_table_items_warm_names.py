# head: swiglu


class _Launcher:
    def __init__(self, block):
        self.block = block

    def run(self, x):
        return swiglu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.impls = {"small": _Launcher(256), "large": _Launcher(1024)}
        self.names = sorted(self.impls.keys())

    def forward(self, x):
        key = "small" if x.shape[-1] <= 512 else "large"
        impl = self.impls[key]
        return impl.run(x)
