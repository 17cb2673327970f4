"""The provider side: resource types are classes, a `Provider` gathers them, and
`export_provider` adapts it to the `plinth:plugin/provider` interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from .errors import CheckFailure, InvalidInputs, NotFound, PartiallyCreated
from .schema import Prop, Type, validate
from .value import UNKNOWN, Secret, contains_secret, decode_properties, encode, reveal


@dataclass
class ResourceContext:
    """What a call knows about the resource it is about."""

    urn: str
    type: str
    name: str

    @staticmethod
    def of(urn: str) -> "ResourceContext":
        parts = urn.split("::")
        return ResourceContext(urn, parts[2] if len(parts) > 2 else "", "::".join(parts[3:]))


@dataclass
class State:
    """A resource's recorded state (secrets revealed)."""

    id: str
    inputs: Dict[str, Any]
    outputs: Dict[str, Any]


@dataclass
class Created:
    id: str
    outputs: Dict[str, Any]


@dataclass
class ReadResult:
    """The resource as it exists now; `id` and `inputs` default to the recorded ones."""

    outputs: Dict[str, Any]
    id: Optional[str] = None
    inputs: Optional[Dict[str, Any]] = None


@dataclass
class Diff:
    changed: List[str]
    replaces: List[str] = field(default_factory=list)
    delete_before_replace: bool = False


class ResourceType:
    """One resource type. Subclass it: set `token`, `inputs` and `outputs`, define `create`, and
    `read`, `update` and `delete` as the resource allows.

    Inputs arrive validated against `inputs` (defaults applied, secrets revealed); outputs
    declared secret, or named like an input that held a secret, are stored as secrets.
    `create` and `update` are never called during a preview: the planned outputs are the
    inputs of the same names and unknown for the rest, unless `plan` says more. Without
    `update`, every change replaces the resource."""

    token: str = ""
    description: str = ""
    inputs: Dict[str, Prop] = {}
    outputs: Dict[str, Prop] = {}

    def check(self, inputs: Dict[str, Any], olds: Optional[Dict[str, Any]],
              ctx: ResourceContext) -> Optional[Dict[str, Any]]:
        """Rules the schema cannot say: raise `InvalidInputs`, or return normalized inputs."""
        return None

    def diff(self, olds: State, news: Dict[str, Any], ctx: ResourceContext) -> Optional[Diff]:
        """`None` (the default): the inputs that differ; those marked `replace_on_change` (or
        all of them, without `update`) replace the resource."""
        return None

    def plan(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Dict[str, Any]:
        """The outputs a preview shows, beyond the inputs of the same names."""
        return {}

    def create(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Created:
        raise NotImplementedError(f"{self.token} does not implement create")

    def read(self, state: State, ctx: ResourceContext) -> Optional[ReadResult]:
        """The resource as it exists now, or `None` if it is gone (what `refresh` records)."""
        return ReadResult(outputs=state.outputs)

    def update(self, olds: State, news: Dict[str, Any], ctx: ResourceContext) -> Dict[str, Any]:
        raise NotImplementedError(f"{self.token} cannot be updated in place")

    def delete(self, state: State, ctx: ResourceContext) -> None:
        return None

    @property
    def updatable(self) -> bool:
        return type(self).update is not ResourceType.update


class Function:
    """A function programs call with `ctx.invoke`: set `token`, `inputs` and `output`."""

    token: str = ""
    description: str = ""
    inputs: Dict[str, Prop] = {}
    output: Prop = Prop(Type("any"))

    def invoke(self, args: Dict[str, Any]) -> Any:
        raise NotImplementedError(f"{self.token} does not implement invoke")


@dataclass
class DirRequest:
    guest: str
    write: bool
    why: str


@dataclass
class Capabilities:
    """What the provider asks the project to grant; nothing by default."""

    dirs: List[DirRequest] = field(default_factory=list)
    env: List[str] = field(default_factory=list)
    tcp: List[str] = field(default_factory=list)
    udp: List[str] = field(default_factory=list)
    http: List[str] = field(default_factory=list)


@dataclass
class Provider:
    name: str
    version: str
    resources: List[ResourceType]
    description: str = ""
    capabilities: Capabilities = field(default_factory=Capabilities)
    config: Dict[str, Prop] = field(default_factory=dict)
    configure: Optional[Callable[[Dict[str, Any]], None]] = None
    functions: List[Function] = field(default_factory=list)


def _unexpected(e: BaseException) -> str:
    """An exception the provider did not mean to raise: its type, message and where it was
    raised (`KeyError: 'path' (at envfile.py:42 in create)`)."""
    import traceback

    from .program import _source
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/plinth/" not in f.filename]
    where = f" (at {_source(frames[-1].filename)}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    if isinstance(e, (NotImplementedError, RuntimeError, ValueError, OSError)) and str(e):
        return f"{e}{where}"
    return f"{type(e).__name__}: {e}{where}"


def export_provider(provider: Provider) -> type:
    """The class componentize-py instantiates for the `provider` export."""
    import wit_world.exports
    from componentize_py_types import Err
    from wit_world.exports import provider as wit
    from wit_world.imports import schema as wschema
    from wit_world.imports import types as wtypes

    resources = {r.token: r for r in provider.resources}
    functions = {f.token: f for f in provider.functions}

    def to_wit_error(e: BaseException):
        if isinstance(e, InvalidInputs):
            return wit.ProviderError_Invalid([wtypes.CheckFailure(f.property, f.reason) for f in e.failures])
        if isinstance(e, NotFound):
            return wit.ProviderError_NotFound()
        if isinstance(e, PartiallyCreated):
            return wit.ProviderError_PartiallyCreated(wit.PartialState(e.id, encode(e.outputs), e.reasons))
        return wit.ProviderError_Failed(_unexpected(e))

    def guarded(method):
        def call(self, *args):
            try:
                return method(self, *args)
            except Err:
                raise
            except Exception as e:  # every failure becomes the call's typed error
                raise Err(to_wit_error(e))
        return call

    def resource(urn: str):
        ctx = ResourceContext.of(urn)
        r = resources.get(ctx.type)
        if r is None:
            raise Err(wit.ProviderError_UnknownType(ctx.type))
        return r, ctx

    def state(id, inputs, outputs) -> State:
        return State(id, reveal(decode_properties(inputs)), reveal(decode_properties(outputs)))

    def failures(fs: List[CheckFailure]):
        return [wtypes.CheckFailure(f.property, f.reason) for f in fs]

    def type_tree(ty: Type):
        nodes: list = []

        def push(t: Type) -> int:
            index = len(nodes)
            nodes.append(wschema.TypeNode_Any())
            if t.kind == "array":
                nodes[index] = wschema.TypeNode_Array(push(t.items))
            elif t.kind == "map":
                nodes[index] = wschema.TypeNode_Map(push(t.items))
            elif t.kind == "enum":
                nodes[index] = wschema.TypeNode_Enum(list(t.values))
            elif t.kind == "object":
                fields = [
                    wschema.FieldSchema(name, p.description, p.required, p.secret,
                                        encode(p.default) if p.has_default else None, push(p.type))
                    for name, p in t.fields.items()
                ]
                nodes[index] = wschema.TypeNode_Object(wschema.ObjectType(t.name, t.description, fields))
            else:
                simple = {"any": wschema.TypeNode_Any, "string": wschema.TypeNode_String,
                          "integer": wschema.TypeNode_Integer, "number": wschema.TypeNode_Number,
                          "boolean": wschema.TypeNode_Boolean}
                nodes[index] = simple[t.kind]()
            return index

        push(ty)
        return wschema.TypeTree(nodes)

    def schemas(props: Dict[str, Prop]):
        return [
            wschema.PropertySchema(name, p.description, p.required, p.secret, p.replace_on_change,
                                   type_tree(p.type), encode(p.default) if p.has_default else None)
            for name, p in props.items()
        ]

    def secret_outputs(r: ResourceType, inputs: Dict[str, Any], outputs: Dict[str, Any]) -> Dict[str, Any]:
        out = {}
        for name, value in outputs.items():
            declared = r.outputs.get(name)
            # An output named like an input that held a secret anywhere may hold it too.
            secret = (declared is not None and declared.secret) or contains_secret(inputs.get(name))
            out[name] = Secret(value) if secret and not isinstance(value, Secret) else value
        return out

    def resecret(given: Dict[str, Any], normalized: Dict[str, Any]) -> Dict[str, Any]:
        return {k: Secret(v) if contains_secret(given.get(k)) and not contains_secret(v) else v
                for k, v in normalized.items()}

    def planned(r: ResourceType, inputs: Dict[str, Any], ctx: ResourceContext) -> Dict[str, Any]:
        plan = r.plan(reveal(inputs), ctx) or {}
        outputs = {name: plan[name] if name in plan else inputs.get(name, UNKNOWN) for name in r.outputs}
        return secret_outputs(r, inputs, outputs)

    class Exports(wit_world.exports.Provider):
        def info(self):
            c = provider.capabilities
            return wit.PluginInfo(
                provider.name, provider.version,
                wit.Capabilities([wit.DirRequest(d.guest, d.write, d.why) for d in c.dirs],
                                 list(c.env), list(c.tcp), list(c.udp), list(c.http)),
                provider.description, schemas(provider.config),
                [wschema.ResourceSchema(r.token, r.description, schemas(r.inputs), schemas(r.outputs))
                 for r in provider.resources],
                [wschema.FunctionSchema(f.token, f.description, schemas(f.inputs), type_tree(f.output.type))
                 for f in provider.functions])

        @guarded
        def check_config(self, config):
            owner = f"a setting of the {provider.name} provider"
            inputs, fs = validate(provider.config, decode_properties(config), owner)
            return wit.CheckResult(encode(inputs), failures(fs))

        @guarded
        def configure(self, config):
            inputs, _ = validate(provider.config, decode_properties(config))
            if provider.configure is not None:
                provider.configure(reveal(inputs))

        @guarded
        def check(self, urn, olds, news):
            r, ctx = resource(urn)
            inputs, fs = validate(r.inputs, decode_properties(news), f"an input of {ctx.type}")
            if not fs:
                old = None if olds is None else reveal(decode_properties(olds))
                normalized = r.check(reveal(inputs), old, ctx)
                if normalized is not None:
                    inputs = resecret(inputs, normalized)
            return wit.CheckResult(encode(inputs), failures(fs))

        @guarded
        def diff(self, urn, id, old_inputs, old_outputs, new_inputs):
            r, ctx = resource(urn)
            news = decode_properties(new_inputs)
            d = r.diff(state(id, old_inputs, old_outputs), reveal(news), ctx)
            if d is None:
                olds = decode_properties(old_inputs)
                changed = sorted(k for k in set(olds) | set(news) if olds.get(k) != news.get(k))
                replaces = [k for k in changed if not r.updatable or
                            (k in r.inputs and r.inputs[k].replace_on_change)]
                d = Diff(changed, replaces)
            return wit.DiffResult(list(d.changed), list(d.replaces), d.delete_before_replace)

        @guarded
        def create(self, urn, inputs, preview):
            r, ctx = resource(urn)
            given = decode_properties(inputs)
            if preview:
                return wit.Created("", encode(planned(r, given, ctx)))
            created = r.create(reveal(given), ctx)
            return wit.Created(created.id, encode(secret_outputs(r, given, created.outputs)))

        @guarded
        def read(self, urn, id, inputs, outputs):
            r, ctx = resource(urn)
            found = r.read(state(id, inputs, outputs), ctx)
            if found is None:
                return None
            given = decode_properties(inputs)
            new_inputs = given if found.inputs is None else resecret(given, found.inputs)
            return wit.ReadResult(found.id or id, encode(new_inputs),
                                  encode(secret_outputs(r, new_inputs, found.outputs)))

        @guarded
        def update(self, urn, id, old_inputs, old_outputs, new_inputs, preview):
            r, ctx = resource(urn)
            news = decode_properties(new_inputs)
            if preview:
                return encode(planned(r, news, ctx))
            outputs = r.update(state(id, old_inputs, old_outputs), reveal(news), ctx)
            return encode(secret_outputs(r, news, outputs))

        @guarded
        def delete(self, urn, id, inputs, outputs):
            r, ctx = resource(urn)
            r.delete(state(id, inputs, outputs), ctx)

        @guarded
        def invoke(self, token, args):
            f = functions.get(token)
            if f is None:
                raise Err(wit.ProviderError_UnknownType(token))
            given, fs = validate(f.inputs, decode_properties(args), f"an argument of {token}")
            if fs:
                raise InvalidInputs(fs)
            return encode(f.invoke(reveal(given)))

    return Exports
