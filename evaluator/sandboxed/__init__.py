"""The verifier's code that runs inside sandboxed processes (it imports torch, the task and candidates).

Nothing in the parent (``evaluator.session`` and the modules next to it) imports this package: the
parent talks to these processes over pipes (:mod:`evaluator.processes`). Roles: ``reference`` (the
task's answers, baselines and judging of outputs), ``candidate`` (one candidate under guard),
``proposer`` (the offline proposer, which traces the task).
"""
