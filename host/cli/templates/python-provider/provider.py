"""{{ name }}: a plinth provider. Its resource types, with the schema of their inputs and
outputs: what `plinth plugin inspect` shows, what the default `check` validates inputs against
and what `plinth gen-sdk` turns into typed SDKs for programs. plinth builds this project into a
component (the `plinth` module is provided by plinth) and runs it sandboxed.

    python3 -m unittest                                    # test_greeting.py, natively
    plinth plugin inspect .                                # builds the component, shows its types
    plinth gen-sdk . --lang python --out sdks/python       # a typed SDK (or rust, ts)
"""

from typing import Any, Dict, Optional

from plinth import (
    Capabilities, Created, InvalidInputs, Provider, ResourceContext, ResourceType, State, t,
)

from greeting import message, refusal


class Greeting(ResourceType):
    token = "{{ name }}:Greeting"
    description = "A greeting of a name."
    inputs = {
        "name": t.string(required=True, description="Who is greeted."),
        "excited": t.boolean(default=False, description="End with `!` rather than `.`."),
    }
    outputs = {"message": t.string(required=True, description="The greeting.")}

    def check(self, inputs: Dict[str, Any], olds: Optional[Dict[str, Any]],
              ctx: ResourceContext) -> Optional[Dict[str, Any]]:
        # Rules the schema cannot say; its checks (required, types) ran before.
        reason = refusal(inputs)
        if reason:
            raise InvalidInputs.of("name", reason)
        return None

    def plan(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Dict[str, Any]:
        # During a preview the outputs are known from the inputs: say so.
        return {"message": message(inputs)}

    def create(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Created:
        return Created(ctx.name, {"message": message(inputs)})

    def update(self, olds: State, news: Dict[str, Any], ctx: ResourceContext) -> Dict[str, Any]:
        return {"message": message(news)}

    # `read` returns the recorded state and `delete` does nothing, by default: a greeting
    # exists only in the state.


provider = Provider(
    name="{{ name }}",
    version="0.1.0",
    description="Greetings, made by `plinth new python-provider`.",
    resources=[Greeting()],
    # Nothing outside the sandbox: ask for directories, hosts or variables here.
    capabilities=Capabilities(),
)
