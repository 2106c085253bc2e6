"""What the request socket between the parent and a sandboxed process carries at most (shared by the request loop,
:mod:`evaluator.sandboxed.entry`, and the output hand-off, :mod:`evaluator.sandboxed.handoff`; the parent keeps its
own copy in :mod:`evaluator.processes`, which never imports this side, and a test holds the two equal)."""

MAX_FDS_PER_MESSAGE = 64  # file descriptors in one message, either way
