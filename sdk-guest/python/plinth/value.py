"""Values as plinth carries them: Python data plus `Secret`, `UNKNOWN` and references to other
resources' outputs, to and from the WIT value tree (a flattened list of typed nodes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Union

from wit_world.imports import types as wit

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Secret:
    """A value that must stay encrypted at rest and hidden in every display."""

    value: Any

    def __repr__(self) -> str:
        return "Secret([secret])"

    __str__ = __repr__


class Unknown:
    """A value not known yet: during a preview, the outputs of resources not created yet."""

    _instance: "Unknown | None" = None

    def __new__(cls) -> "Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown()
"""The one unknown value."""


@dataclass(frozen=True)
class OutputRef:
    """Program to engine only: the not-yet-known output of another registration."""

    handle: int
    field: wit.OutputField


Value = Union[None, bool, int, float, str, Secret, Unknown, OutputRef, List[Any], Dict[str, Any]]
"""A property value: ints travel as 64-bit integers, floats as floats."""


def encode(value: Any) -> wit.Value:
    """Flattens `value` into the WIT node tree: `nodes[0]` is the root."""
    nodes: List[wit.Node] = []

    def push(v: Any, path: str) -> int:
        index = len(nodes)
        nodes.append(wit.Node_Null())
        nodes[index] = node(v, path)
        return index

    def node(v: Any, path: str) -> wit.Node:
        if hasattr(v, "__plinth_value__"):
            v = v.__plinth_value__()
        if v is None:
            return wit.Node_Null()
        if isinstance(v, bool):
            return wit.Node_Boolean(v)
        if isinstance(v, int):
            if not INT64_MIN <= v <= INT64_MAX:
                raise ValueError(f"{_at(path)}{v} does not fit in a 64-bit integer")
            return wit.Node_Integer(v)
        if isinstance(v, float):
            if v != v or v in (float("inf"), float("-inf")):
                raise ValueError(f"{_at(path)}{v} is not a finite number")
            return wit.Node_Number(v)
        if isinstance(v, str):
            return wit.Node_Text(v)
        if isinstance(v, Secret):
            return wit.Node_Secret(push(v.value, path))
        if isinstance(v, Unknown):
            return wit.Node_Unknown()
        if isinstance(v, OutputRef):
            return wit.Node_Output(wit.OutputRef(v.handle, v.field))
        if isinstance(v, (list, tuple)):
            return wit.Node_Array([push(item, f"{path}[{i}]") for i, item in enumerate(v)])
        if isinstance(v, dict):
            entries = []
            for key, item in v.items():
                if not isinstance(key, str):
                    raise ValueError(f"{_at(path)}object keys must be strings, not {key!r}")
                entries.append((key, push(item, f"{path}.{key}" if path else key)))
            return wit.Node_Object(entries)
        raise ValueError(f"{_at(path)}a {type(v).__name__} is not a value plinth can carry")

    push(value, "")
    return wit.Value(nodes)


def _at(path: str) -> str:
    return f"`{path}`: " if path else ""


def decode(value: wit.Value) -> Any:
    """Rebuilds a value from its WIT node tree. A malformed tree is an error."""
    nodes = value.nodes

    def visit(index: int, depth: int) -> Any:
        if index >= len(nodes) or depth > 256:
            raise ValueError(f"malformed value: node {index}")
        n = nodes[index]
        if isinstance(n, wit.Node_Null):
            return None
        if isinstance(n, (wit.Node_Boolean, wit.Node_Integer, wit.Node_Number, wit.Node_Text)):
            return n.value
        if isinstance(n, wit.Node_Array):
            return [visit(child, depth + 1) for child in n.value]
        if isinstance(n, wit.Node_Object):
            return {key: visit(child, depth + 1) for key, child in n.value}
        if isinstance(n, wit.Node_Secret):
            return Secret(visit(n.value, depth + 1))
        if isinstance(n, wit.Node_Unknown):
            return UNKNOWN
        if isinstance(n, wit.Node_Output):
            return OutputRef(n.value.handle, n.value.field)
        raise ValueError(f"malformed value: node {index} is {n!r}")

    if not nodes:
        raise ValueError("a value with no nodes")
    return visit(0, 0)


def decode_properties(value: wit.Value) -> Dict[str, Any]:
    """Decodes a property map: a value whose root is an object (anything else reads as empty)."""
    decoded = decode(value)
    return decoded if isinstance(decoded, dict) else {}


def _some(v: Any, test: Callable[[Any], bool]) -> bool:
    if test(v):
        return True
    if isinstance(v, Secret):
        return _some(v.value, test)
    if isinstance(v, (list, tuple)):
        return any(_some(item, test) for item in v)
    if isinstance(v, dict):
        return any(_some(item, test) for item in v.values())
    return False


def contains_secret(v: Any) -> bool:
    return _some(v, lambda x: isinstance(x, Secret))


def contains_unknown(v: Any) -> bool:
    return _some(v, lambda x: isinstance(x, Unknown))


def contains_output_ref(v: Any) -> bool:
    return _some(v, lambda x: isinstance(x, OutputRef) or hasattr(x, "__plinth_value__"))


def reveal(v: Any) -> Any:
    """`v` with every secret unwrapped: the plaintext, for code that needs it."""
    if isinstance(v, Secret):
        return reveal(v.value)
    if isinstance(v, list):
        return [reveal(item) for item in v]
    if isinstance(v, dict):
        return {key: reveal(item) for key, item in v.items()}
    return v


def kind_of(v: Any) -> str:
    """A short description of a value's kind, for error messages."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, Secret):
        return "a secret"
    if isinstance(v, Unknown):
        return "an unknown value"
    if isinstance(v, OutputRef):
        return "an output of another resource"
    if isinstance(v, (list, tuple)):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return f"a {type(v).__name__}"
