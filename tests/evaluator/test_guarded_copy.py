"""Inputs placed for a candidate (taskspec.guarded_copy): guard regions where possible, always a copy."""

import torch

from evaluator.sandboxed.taskspec import guarded_copy


def test_an_unguardable_input_is_still_a_copy_of_its_input_set():
    """A channels-last (non-contiguous) input cannot sit in a guarded buffer; what the candidate gets must still be a
    copy, or a later call reusing its storage would overwrite the input set it was drawn from."""
    original = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    kept = original.clone()
    placed = guarded_copy(original, "cpu")
    assert placed is not original and placed.data_ptr() != original.data_ptr()
    placed.copy_(torch.zeros_like(placed))
    assert torch.equal(original, kept)
    empty = torch.empty(0)
    assert guarded_copy(empty, "cpu") is not empty
