# head: swiglu


class _Launcher:
    def __init__(self, block):
        self.block = block

    def run(self, x):
        return swiglu(x)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.impls = {torch.float16: _Launcher(1024), torch.bfloat16: _Launcher(1024)}

    def forward(self, x):
        return self.impls.get(x.dtype, self.impls[torch.bfloat16]).run(x)
