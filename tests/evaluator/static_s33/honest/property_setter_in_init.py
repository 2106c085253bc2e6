# head: gelu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = 1024

    @property
    def block(self):
        return self._block

    @block.setter
    def block(self, v):
        self._block = int(v)

    def forward(self, x):
        return gelu_tanh(x)
