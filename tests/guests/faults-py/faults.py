"""A provider that misbehaves on purpose, for the tests: each resource type fails its create in
one way a guest can (an exception, an endless loop, memory without bound)."""

from __future__ import annotations

from typing import Any, Dict

from plinth import Created, Provider, ResourceContext, ResourceType, t

INPUTS = {"size": t.integer()}


class Throw(ResourceType):
    token = "faults:Throw"
    inputs = INPUTS

    def create(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Created:
        raise RuntimeError("thrown on purpose by the faults provider")


class Loop(ResourceType):
    token = "faults:Loop"
    inputs = INPUTS

    def create(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Created:
        while True:  # spins until the call's deadline
            pass


class Alloc(ResourceType):
    token = "faults:Alloc"
    inputs = INPUTS

    def create(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Created:
        hoard = []
        while True:
            hoard.append(bytearray(1 << 20))


provider = Provider(
    name="faults",
    version="0.1.0",
    description="fails on purpose",
    resources=[Throw(), Loop(), Alloc()],
)
