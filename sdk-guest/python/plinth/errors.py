"""Errors a provider raises to say why a call failed; any other exception fails the call with
its message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List


@dataclass
class CheckFailure:
    """A problem with one property; `property` is empty when it concerns the whole input."""

    property: str
    reason: str


class InvalidInputs(Exception):
    """The inputs or configuration were rejected."""

    def __init__(self, failures: List[CheckFailure]):
        self.failures = failures
        super().__init__("; ".join(f"{f.property}: {f.reason}" if f.property else f.reason for f in failures))

    @classmethod
    def of(cls, property: str, reason: str) -> "InvalidInputs":
        return cls([CheckFailure(property, reason)])


class NotFound(Exception):
    """The resource does not exist anymore."""


class PartiallyCreated(Exception):
    """Created but failed to initialize: plinth records the resource with these outputs (so that
    it can be deleted or retried) and halts."""

    def __init__(self, id: str, outputs: Dict[str, Any], reasons: List[str]):
        self.id = id
        self.outputs = outputs
        self.reasons = reasons
        super().__init__("; ".join(reasons))


class ConfigError(Exception):
    """A configuration value is missing or malformed."""
