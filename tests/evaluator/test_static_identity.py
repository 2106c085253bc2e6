"""Environment reads that can only say where a process runs (evaluator/static_identity.py): refused by literal or
folded name; library flags, read by literal or computed names, stay allowed."""

from __future__ import annotations

import pytest
from test_static_check import make

from evaluator.static_check import check_source
from evaluator.static_identity import is_identity


def _rules(source: str) -> list[str]:
    return [v.rule for v in check_source(source, "cand.py").violations]


HONEST = {
    "a Triton flag": dict(module="import os\nINTERPRET = os.environ.get('TRITON_INTERPRET', '0') == '1'\n"),
    "a library switch with a default": dict(module="import os\nFAST = os.getenv('FLA_USE_FAST_OPS', '0') == '1'\n"),
    "a flag tested by name": dict(module="import os\nDEBUG = 'MYLIB_DEBUG' in os.environ\n"),
    "a name made from the op": dict(module="import os\nOP = 'rms'\nIMPL = os.environ.get(f'LIGER_KERNEL_IMPL_{OP}')\n"),
    "CUDA_HOME": dict(module="import os\nCUDA = os.environ.get('CUDA_HOME')\n"),
}


@pytest.mark.parametrize("parts", list(HONEST.values()), ids=list(HONEST))
def test_library_flags_are_read_freely(parts):
    assert "introspection" not in _rules(make(**parts))


ATTACKS = {
    "HOME by get": dict(init="import os\nself.home = os.environ.get('HOME')"),
    "USER by getenv": dict(module="import os\nWHO = os.getenv('USER', '')\n"),
    "PWD tested": dict(module="import os\nIN_REPO = 'PWD' in os.environ\n"),
    "LOGNAME not in": dict(module="import os\nNO_LOGIN = 'LOGNAME' not in os.environ\n"),
    "a folded name": dict(module="import os\nH = os.environ.get('HO' + 'ME', '')\n"),
    "a constant name": dict(module="import os\nVAR = 'SHLVL'\nLEVEL = os.getenv(VAR)\n"),
    "an f-string to a home": dict(module="import os\nK = 'HO'\nX = os.environ.get(f'{K}ME')\n"),
    "an XDG variable": dict(module="import os\nX = os.environ.get('XDG_SESSION_ID')\n"),
    "the process's path": dict(module="import os\nP = os.getenv('PATH', '')\n"),
}


@pytest.mark.parametrize("parts", list(ATTACKS.values()), ids=list(ATTACKS))
def test_reads_of_where_the_process_runs_are_refused(parts):
    assert "introspection" in _rules(make(**parts))


def test_identity_names():
    assert is_identity("HOME") and is_identity("SSH_CONNECTION") and is_identity("KERNELEVO_CACHE_DIR")
    assert not is_identity("TRITON_INTERPRET") and not is_identity("HOMEBREW_PREFIX") and not is_identity("CUDA_HOME")
