"""The keeper provider in Python, for the end-to-end tests of write-only inputs: each
`keeper:Login` writes the write-only `secret_wo` it is sent to the file `/keep/<name>` of the
directory it is granted, so that a test sees what the provider received (and when) while it
checks that plinth recorded none of it. Its twin in TypeScript is tests/plugins/keeper-ts."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from plinth import (
    Capabilities, Created, DirRequest, InvalidInputs, Provider, ReadResult, ResourceContext,
    ResourceType, State, t,
)

KEEP = "/keep"


def _keep(inputs: Dict[str, Any]) -> None:
    # `update` gets the value only when its version changed.
    if inputs.get("secret_wo") is not None:
        with open(os.path.join(KEEP, inputs["name"]), "w") as f:
            f.write(inputs["secret_wo"])


class Login(ResourceType):
    token = "keeper:Login"
    inputs = {
        "name": t.string(required=True, replace_on_change=True),
        "secret_wo": t.string(write_only="secret_wo_version", description="The login's secret."),
        "secret_wo_version": t.integer(description="Change it to send a new `secret_wo`."),
    }
    outputs = {
        "name": t.string(required=True),
        # Returned by `create` on purpose: the host must drop it.
        "secret_wo": t.string(),
    }

    def check(self, inputs: Dict[str, Any], olds: Optional[Dict[str, Any]],
              ctx: ResourceContext) -> None:
        if "/" in inputs["name"] or inputs["name"].startswith("."):
            raise InvalidInputs.of("name", "must be a plain file name")

    def create(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Created:
        _keep(inputs)
        return Created(inputs["name"], {"name": inputs["name"], "secret_wo": inputs.get("secret_wo")})

    def update(self, olds: State, news: Dict[str, Any], ctx: ResourceContext) -> Dict[str, Any]:
        _keep(news)
        return {"name": news["name"]}

    def read(self, state: State, ctx: ResourceContext) -> Optional[ReadResult]:
        return ReadResult(outputs=state.outputs) if os.path.exists(os.path.join(KEEP, state.id)) else None

    def delete(self, state: State, ctx: ResourceContext) -> None:
        path = os.path.join(KEEP, state.id)
        if os.path.exists(path):
            os.remove(path)


provider = Provider(
    name="keeper",
    version="0.1.0",
    resources=[Login()],
    capabilities=Capabilities(dirs=[DirRequest(KEEP, True, "each login's secret is written there")]),
)
