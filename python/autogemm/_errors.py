"""The exceptions autogemm raises; the C++ library's errors become these (python/src/errors.cpp)."""

from __future__ import annotations

__all__ = ["Error", "InvalidArgument", "CudaError", "NoDevice"]


class Error(Exception):
    """Base of every error autogemm raises (C++ ``autogemm::Error``)."""


class InvalidArgument(Error, ValueError):
    """A caller-supplied value broke a rule (C++ ``autogemm::InvalidArgument``).

    ``str(e)`` reads ``"<argument> = <value>: <rule>"``, for example
    ``"lda = 1001 elements (2002 bytes): TMA needs row strides that are a multiple of 16 bytes"``.

    Attributes:
        argument: the argument's name (``"a"``, ``"out"``, ``"layout"``, ``"config"``, ``"m"``...).
        value: its value as text.
        rule: the rule it broke.
    """

    def __init__(self, argument: str, value: str, rule: str) -> None:
        super().__init__(f"{argument} = {value}: {rule}")
        self.argument = argument
        self.value = value
        self.rule = rule

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:  # fields survive pickling
        return (type(self), (self.argument, self.value, self.rule))


class CudaError(Error, RuntimeError):
    """The CUDA runtime, driver, NVRTC or cuBLASLt failed; the message names the call."""


class NoDevice(Error, RuntimeError):
    """No usable CUDA device: no driver, no GPU, or a GPU the requested path cannot use."""
