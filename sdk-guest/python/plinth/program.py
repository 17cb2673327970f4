"""The program side: `main(ctx)` declares resources through the `plinth:plugin/monitor`
import; `export_program` adapts it to the `callbacks` interface the host calls."""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, TypeVar

from .errors import ConfigError
from .value import (
    UNKNOWN, OutputRef, Secret, contains_output_ref, contains_secret, contains_unknown, decode,
    encode, reveal,
)

T = TypeVar("T")
R = TypeVar("R")


def _monitor():
    # Imported when used: the module exists only in components built for the program world.
    from wit_world.imports import monitor
    return monitor


class Output(Generic[T]):
    """A value that may not be known until the engine has done its work: another resource's
    output, or something computed from one. Pass it as an input or a stack output, or
    transform it with `apply`. It never blocks."""

    def __init__(self, value: Any):
        self._value = value

    @staticmethod
    def of(value: T) -> "Output[T]":
        """An output whose value is known now."""
        return Output(value)

    @staticmethod
    def secret(value: Any) -> "Output[Any]":
        """A value made secret: hidden in displays and sealed in state wherever it goes."""
        inner = _to_value(value)
        return Output(inner if isinstance(inner, Secret) else Secret(inner))

    @staticmethod
    def all(*outputs: Any) -> "Output[List[Any]]":
        """Several outputs combined, for one `apply` that sees them all, in order."""
        return _All([_to_value(o) for o in outputs])

    def __plinth_value__(self) -> Any:
        return self._value

    @property
    def is_known(self) -> bool:
        return not contains_output_ref(self._value) and not contains_unknown(self._value)

    def apply(self, fn: Callable[[T], R]) -> "Output[R]":
        """Transforms the value once it is known. If it is known now, `fn` runs at once;
        otherwise the engine resumes it when the value resolves. During a preview, an unknown
        value makes the result unknown and `fn` does not run. A secret is passed revealed and
        makes the result secret. `fn` may return a value or an `Output`."""
        return Output(_apply([self._value], lambda values: fn(values[0])))

    def __str__(self) -> str:
        return "[Output: use .apply() to read the value]"

    def __repr__(self) -> str:
        return "Output(...)"


class _All(Output[List[Any]]):
    def apply(self, fn: Callable[[List[Any]], R]) -> "Output[R]":
        return Output(_apply(self._value, fn))


def _to_value(v: Any) -> Any:
    return v.__plinth_value__() if isinstance(v, Output) else v


@dataclass
class _Pending:
    arity: int
    fn: Callable[[List[Any]], Any]


_pending: Dict[int, _Pending] = {}


def _apply(inputs: List[Any], fn: Callable[[List[Any]], Any]) -> Any:
    if any(contains_output_ref(v) for v in inputs):
        handle = _monitor().register_apply([encode(v) for v in inputs])
        _pending[handle] = _Pending(len(inputs), fn)
        return OutputRef(handle, _property([]))
    return _run(inputs, fn)


def _property(path: List[str]):
    from wit_world.imports import types
    return types.OutputField_Property(path)


def _run(values: List[Any], fn: Callable[[List[Any]], Any]) -> Any:
    if any(contains_unknown(v) for v in values):
        return UNKNOWN
    secret = any(contains_secret(v) for v in values)
    result = _to_value(fn([reveal(v) for v in values]))
    return Secret(result) if secret and not isinstance(result, Secret) else result


def _resume(handle: int, inputs: List[Any]) -> Any:
    pending = _pending.pop(handle, None)
    if pending is None:
        raise RuntimeError(f"no apply with handle {handle} is pending")
    if len(inputs) != pending.arity:
        raise RuntimeError(f"apply {handle} takes {pending.arity} inputs, but was resumed with {len(inputs)}")
    return _run([decode(v) for v in inputs], pending.fn)


class Resource:
    """A registered resource; its outputs resolve as the engine works."""

    def __init__(self, handle: int):
        self.handle = handle

    def output(self, name: str) -> Output[Any]:
        """The output property `name`."""
        return Output(OutputRef(self.handle, _property([name])))

    @property
    def id(self) -> Output[str]:
        """The provider-assigned id."""
        from wit_world.imports import types
        return Output(OutputRef(self.handle, types.OutputField_Id()))

    @property
    def urn(self) -> Output[str]:
        from wit_world.imports import types
        return Output(OutputRef(self.handle, types.OutputField_Urn()))


class ComponentResource(Resource):
    """A component: a named group of resources, with outputs of its own."""

    def register_outputs(self, outputs: Dict[str, Any]) -> None:
        _monitor().register_outputs(self.handle, encode(outputs))


@dataclass
class ResourceOptions:
    """Options that change how the engine treats a resource."""

    depends_on: Sequence[Resource] = ()
    parent: Optional[Resource] = None
    provider: Optional[Resource] = None
    protect: bool = False
    retain_on_delete: bool = False
    delete_before_replace: bool = False
    ignore_changes: Sequence[str] = ()
    replace_on_changes: Sequence[str] = ()
    aliases: Sequence[str] = ()
    create_timeout: Optional[float] = None
    update_timeout: Optional[float] = None
    delete_timeout: Optional[float] = None
    import_id: Optional[str] = None

    def to_wit(self):
        m = _monitor()
        secs = lambda s: None if s is None else max(0, int(-(-s // 1)))  # noqa: E731 (rounded up)
        timeouts = None
        if any(x is not None for x in (self.create_timeout, self.update_timeout, self.delete_timeout)):
            timeouts = m.CustomTimeouts(secs(self.create_timeout), secs(self.update_timeout),
                                        secs(self.delete_timeout))
        return m.ResourceOptions(
            [r.handle for r in self.depends_on],
            None if self.parent is None else self.parent.handle,
            None if self.provider is None else self.provider.handle,
            self.protect, self.retain_on_delete, self.delete_before_replace,
            list(self.ignore_changes), list(self.replace_on_changes), list(self.aliases),
            timeouts, self.import_id)


def _inputs(inputs: Optional[Dict[str, Any]], name: str):
    if inputs is None:
        inputs = {}
    if not isinstance(inputs, dict):
        raise TypeError(f"the inputs of `{name}` must be a dict, not {type(inputs).__name__}")
    try:
        return encode(inputs)
    except ValueError as e:
        raise TypeError(f"the inputs of `{name}`: {e}") from None


class Log:
    """Messages shown with the run, by level."""

    def debug(self, message: str) -> None:
        _monitor().log(_monitor().LogLevel.DEBUG, message)

    def info(self, message: str) -> None:
        _monitor().log(_monitor().LogLevel.INFO, message)

    def warn(self, message: str) -> None:
        _monitor().log(_monitor().LogLevel.WARN, message)

    def error(self, message: str) -> None:
        _monitor().log(_monitor().LogLevel.ERROR, message)


class Context:
    """The program's view of the engine during one run."""

    def __init__(self) -> None:
        info = _monitor().get_stack_info()
        self.project: str = info.project
        self.stack: str = info.stack
        #: True during `preview`: outputs of resources not created yet are unknown.
        self.dry_run: bool = info.dry_run
        self.log = Log()
        self._exports: Dict[str, Any] = {}

    def config(self, key: str, default: Optional[str] = None) -> Optional[str]:
        """The configuration value `key` (`key` or `namespace:key`), or `default`. This reveals
        a secret one; read secrets with `secret_config`."""
        value = _config_value(key)
        text = None if value is None else reveal(value)
        return text if isinstance(text, str) else default

    def require_config(self, key: str) -> str:
        value = self.config(key)
        if value is None:
            raise _missing(key, secret=False)
        return value

    def config_int(self, key: str, default: Optional[int] = None) -> Optional[int]:
        """The configuration value `key` as an integer; one that is not is an error."""
        text = self.config(key)
        if text is None:
            return default
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"configuration value `{key}` = `{text}` is not an integer") from None

    def config_bool(self, key: str, default: Optional[bool] = None) -> Optional[bool]:
        text = self.config(key)
        if text is None:
            return default
        if text in ("true", "false"):
            return text == "true"
        raise ConfigError(f"configuration value `{key}` = `{text}` is not true or false")

    def secret_config(self, key: str) -> Optional[Output[str]]:
        """The configuration value `key` as a secret output, hidden wherever it flows."""
        value = _config_value(key)
        return None if value is None else Output(Secret(reveal(value)))

    def require_secret_config(self, key: str) -> Output[str]:
        value = self.secret_config(key)
        if value is None:
            raise _missing(key, secret=True)
        return value

    def resource(self, type: str, name: str, inputs: Optional[Dict[str, Any]] = None,
                 options: Optional[ResourceOptions] = None) -> Resource:
        """Declares a resource of type `type` (e.g. `random:RandomString`)."""
        m = _monitor()
        handle = m.register_resource(m.RegisterRequest(
            type, name, True, _inputs(inputs, name), (options or ResourceOptions()).to_wit()))
        return Resource(handle)

    def component(self, type: str, name: str, options: Optional[ResourceOptions] = None) -> ComponentResource:
        """Declares a component: a named group of resources (made children with `parent`)."""
        m = _monitor()
        handle = m.register_resource(m.RegisterRequest(
            type, name, False, encode({}), (options or ResourceOptions()).to_wit()))
        return ComponentResource(handle)

    def read(self, type: str, name: str, id: str, inputs: Optional[Dict[str, Any]] = None,
             options: Optional[ResourceOptions] = None) -> Resource:
        """Reads an existing resource by `id` without managing it."""
        handle = _monitor().read_resource(type, name, id, _inputs(inputs, name),
                                          (options or ResourceOptions()).to_wit())
        return Resource(handle)

    def export(self, name: str, value: Any) -> None:
        """Sets the stack output `name`."""
        self._exports[name] = _to_value(value)

    def invoke(self, token: str, args: Optional[Dict[str, Any]] = None) -> Any:
        """Calls the provider function `token` with known arguments."""
        from componentize_py_types import Err
        try:
            result = _monitor().invoke(token, _inputs(args, token))
        except Err as e:
            raise RuntimeError(f"{token}: {e.value}") from None
        return reveal(decode(result))


def _config_value(key: str) -> Any:
    value = _monitor().config(key)
    return None if value is None else decode(value)


def _missing(key: str, secret: bool) -> ConfigError:
    flag = " --secret" if secret else ""
    return ConfigError(f"missing required configuration value `{key}` "
                       f"(set it with `plinth config set {key} <value>{flag}`)")


def describe(e: BaseException) -> str:
    """An exception's message and where it was raised: the innermost frames of its traceback."""
    frames = traceback.extract_tb(e.__traceback__)
    # The SDK's own frames say nothing to the program's author.
    ours = [f for f in frames if "/plinth/" not in f.filename] or frames
    where = "\n".join(f"    at {_source(f.filename)}:{f.lineno} in {f.name}" for f in ours[-5:])
    message = f"{type(e).__name__}: {e}"
    return f"{message}\n{where}" if where else message


def _source(filename: str) -> str:
    # componentize-py mounts each directory of the Python path as `/<n>/`; the program's own
    # files are named relative to its project directory.
    return re.sub(r"^/\d+/", "", filename)


def export_program(main: Callable[[Context], Any]) -> type:
    """The class componentize-py instantiates for the `callbacks` export."""
    import wit_world.exports
    from componentize_py_types import Err

    class Callbacks(wit_world.exports.Callbacks):
        def run(self) -> None:
            try:
                ctx = Context()
                main(ctx)
                _monitor().register_outputs(None, encode(ctx._exports))
            except Exception as e:
                raise Err(describe(e))

        def resume(self, apply: int, inputs):
            try:
                return encode(_resume(apply, inputs))
            except Exception as e:
                raise Err(describe(e))

    return Callbacks
