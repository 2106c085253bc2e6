"""The KernelEvo GitHub App: webhook service, event routers, commands, trust, check runs, publishing.

Nothing is imported here on purpose: ``import bot`` stays cheap; use the submodules.
"""
