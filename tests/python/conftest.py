"""Shared by tests/python: run against the installed package (pip install .), never the source
tree. PyTorch (when present) is imported before autogemm so that its CUDA libraries load
first, as they would in an application that imports torch at the top."""

from __future__ import annotations

import os
import pathlib
import re

# JAX would otherwise take 75% of the GPU's memory at its first array.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

try:
    import torch  # noqa: F401
except ImportError:
    pass

import autogemm
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def gpu_unavailable_reason() -> str | None:
    """Why GPU tests cannot run here, or None when a CUDA GPU is present."""
    machine = autogemm.profile()
    if machine["gpus"]:
        return None
    return f"no CUDA GPU: {machine.get('gpu_unavailable_reason', 'none found')}"


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return ROOT


def pytest_report_header(config):
    return [f"autogemm {autogemm.__version__} from {pathlib.Path(autogemm.__file__).parent}",
            f"GPU: {gpu_unavailable_reason() or 'present'}"]


def raises_invalid(argument: str, match: str | None = None):
    """pytest.raises for InvalidArgument naming `argument` (and a rule matching `match`), whose
    message is "<argument> = <value>: <rule>"."""

    class Checker:
        def __enter__(self):
            self.ctx = pytest.raises(autogemm.InvalidArgument)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.ctx.__exit__(*exc)
            error = self.info.value
            assert error.argument == argument, f"argument {error.argument!r}: {error}"
            if match is not None:
                assert re.search(match, error.rule), f"rule {error.rule!r} !~ {match!r}"
            assert str(error) == f"{error.argument} = {error.value}: {error.rule}"
            return handled

    return Checker()
