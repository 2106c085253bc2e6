"""EXPLOIT CUDA source decoded from hex at import, so no string the checker reads holds the code."""

import torch
import torch.nn as nn

from kernelevo import cuda

HEX = (
    "65787465726e20224322205f5f676c6f62616c5f5f20766f6964206178707928636f6e737420666c6f61742a20782c20636f"
    "6e737420666c6f61742a20792c20666c6f61742a206f75742c20666c6f617420612c20696e74206e29207b0a20202020696e"
    "742069203d20626c6f636b4964782e78202a20626c6f636b44696d2e78202b207468726561644964782e783b0a2020202069"
    "66202869203c206e29206f75745b695d203d2061202a20785b695d202b20795b695d3b0a7d0a"
)
SOURCE = bytes.fromhex(HEX).decode()
KERNEL = cuda.compile(SOURCE, "axpy")


class ModelNew(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        KERNEL[((n + 255) // 256,), (256,)](x, y, out, self.alpha, n)
        return out
