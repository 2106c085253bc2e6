# head: gelu


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._x = None

    @property
    def result(self):
        return gelu_tanh(self._x)

    @result.setter
    def result(self, x):
        self._x = x.contiguous()

    def forward(self, x):
        self.result = x
        return self.result
