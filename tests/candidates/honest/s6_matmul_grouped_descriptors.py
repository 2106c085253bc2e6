"""Honest linear + bias + ReLU for tests/tasks/matmul_bias_relu.py in the style of Triton's matmul tutorial
grown into a library: grouped program ordering (GROUP_M swizzle for L2 reuse), device-side tensor descriptors
for x, W and the output (tl.make_tensor_descriptor; triton.set_allocator provides their scratch), a fp32
accumulator with input_precision="ieee" (the task forbids TF32), the bias added in the epilogue."""

import torch
import triton
import triton.language as tl
from torch import nn

BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 32, 64, 32, 4


def _alloc(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda" if torch.cuda.is_available() else "cpu")


@triton.jit
def _grouped_pid(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group_size = GROUP_M * num_pid_n
    group_id = pid // group_size
    first_m = group_id * GROUP_M
    rows_in_group = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group_size) % rows_in_group
    pid_n = (pid % group_size) // rows_in_group
    return pid_m, pid_n


@triton.jit
def _linear_bias_relu(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = _grouped_pid(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    x_desc = tl.make_tensor_descriptor(x_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    w_desc = tl.make_tensor_descriptor(w_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    y_desc = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = x_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
        w = w_desc.load([pid_n * BLOCK_N, k * BLOCK_K])
        acc = tl.dot(a, tl.trans(w), acc, input_precision="ieee")
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    bias = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    y_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], tl.maximum(acc + bias[None, :], 0.0))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        triton.set_allocator(_alloc)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        weight = self.linear.weight.contiguous()
        M, K = x.shape
        N = weight.shape[0]
        y = x.new_empty((M, N))
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
        _linear_bias_relu[grid](x, weight, self.linear.bias, y, M, N, K, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=4, num_stages=3)
        return y
