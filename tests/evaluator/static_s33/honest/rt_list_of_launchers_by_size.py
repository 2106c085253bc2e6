# head: swiglu


class _Launcher:
    def __init__(self, block):
        self.block = block

    def run(self, x):
        return swiglu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = [_Launcher(512), _Launcher(1024)]

    def forward(self, x):
        idx = 0 if x.shape[-1] <= 1024 else 1
        return self.stages[idx].run(x)
