# head: gelu


class GeluOp:
    kernel = _gelu_kernel

    def __call__(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        self.kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.op = GeluOp()

    def forward(self, x):
        return self.op(x)
