# head: gelu


class _ElementwiseBase(nn.Module):
    KERNEL = _gelu_kernel
    BLOCK = 1024

    def _launch(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        self.KERNEL[(triton.cdiv(n, self.BLOCK),)](x, y, n, BLOCK=self.BLOCK)
        return y


class ModelNew(_ElementwiseBase):
    def forward(self, x):
        return self._launch(x)
