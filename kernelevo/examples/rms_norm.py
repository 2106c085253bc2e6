"""The embedded default op: RMSNorm as a transformer block writes it (``kernelevo optimize`` with no PATH).

``inputs`` are the sizes a model runs (bf16, 16384 tokens x 4096 features, and a decode-sized batch);
``small_inputs`` are sizes the Triton CPU interpreter checks in seconds, one with an odd width.
"""

import torch

import kernelevo


@kernelevo.optimize(
    inputs=lambda device: [
        (torch.randn(16384, 4096, device=device, dtype=torch.bfloat16),
         torch.randn(4096, device=device, dtype=torch.bfloat16)),
        (torch.randn(8, 4096, device=device, dtype=torch.bfloat16),
         torch.randn(4096, device=device, dtype=torch.bfloat16)),
    ],
    small_inputs=lambda device: [
        (torch.randn(16, 256, device=device), torch.randn(256, device=device)),
        (torch.randn(5, 123, device=device), torch.randn(123, device=device)),
    ],
    backends=("triton",),
)
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(variance + eps)).to(x.dtype) * weight
