"""Typed schemas: what a provider's resources, functions and configuration take and produce.
Declared with the `t` builders (`t.string(required=True)`), sent to the engine as type trees,
and used by the default `check` to validate inputs and fill in defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .errors import CheckFailure
from .value import OutputRef, Secret, Unknown, kind_of

_NOT_GIVEN: Any = object()


@dataclass(frozen=True)
class Type:
    """The shape of a value: `kind` is any, string, integer, number, boolean, array, map,
    object or enum."""

    kind: str
    items: Optional["Type"] = None
    fields: Dict[str, "Prop"] = field(default_factory=dict)
    values: Tuple[str, ...] = ()
    name: Optional[str] = None
    description: str = ""

    @property
    def element(self) -> "Type":
        """The type of an array's or a map's items (any, if not given)."""
        return self.items if self.items is not None else Type("any")


@dataclass(frozen=True)
class Prop:
    """A property: its type and what the schema says about it."""

    type: Type
    description: str = ""
    required: bool = False
    secret: bool = False
    replace_on_change: bool = False
    default: Any = _NOT_GIVEN
    # Write-only (a top-level resource input, such as a password): the name of its version
    # input. The host sends the value to `create`, and to `update` only when the version input
    # changed, and never records, diffs or shows it; it is always secret.
    write_only: Optional[str] = None

    @property
    def has_default(self) -> bool:
        return self.default is not _NOT_GIVEN


class _Builders:
    """`t.string(required=True, description="...")`, `t.array(t.integer())`, ..."""

    @staticmethod
    def _prop(ty: Type, description: str = "", required: bool = False, secret: bool = False,
              replace_on_change: bool = False, default: Any = _NOT_GIVEN,
              write_only: Optional[str] = None) -> Prop:
        secret = secret or write_only is not None
        return Prop(ty, description, required, secret, replace_on_change, default, write_only)

    def any(self, **options: Any) -> Prop:
        return self._prop(Type("any"), **options)

    def string(self, **options: Any) -> Prop:
        return self._prop(Type("string"), **options)

    def integer(self, **options: Any) -> Prop:
        return self._prop(Type("integer"), **options)

    def number(self, **options: Any) -> Prop:
        return self._prop(Type("number"), **options)

    def boolean(self, **options: Any) -> Prop:
        return self._prop(Type("boolean"), **options)

    def array(self, items: Prop, **options: Any) -> Prop:
        return self._prop(Type("array", items=items.type), **options)

    def map(self, values: Prop, **options: Any) -> Prop:
        return self._prop(Type("map", items=values.type), **options)

    def object(self, fields: Dict[str, Prop], name: Optional[str] = None, **options: Any) -> Prop:
        ty = Type("object", fields=fields, name=name, description=options.get("description", ""))
        return self._prop(ty, **options)

    def enum(self, values: List[str], **options: Any) -> Prop:
        return self._prop(Type("enum", values=tuple(values)), **options)


t = _Builders()


def validate(declared: Dict[str, Prop], given: Dict[str, Any],
             owner: Optional[str] = None) -> Tuple[Dict[str, Any], List[CheckFailure]]:
    """Validates `given` against `declared` and fills in defaults. Each failure names the
    property by its path (`rules[0].port`); unknowns (during a preview) and references pass.
    `owner` words undeclared keys (`an input of kv:Entry`); without it, they are accepted."""
    failures: List[CheckFailure] = []
    return _properties(declared, given, "", owner, failures), failures


def _properties(declared: Dict[str, Prop], given: Dict[str, Any], path: str,
                owner: Optional[str], failures: List[CheckFailure]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in given.items():
        at = f"{path}.{key}" if path else key
        prop = declared.get(key)
        if prop is None:
            if owner:
                names = ", ".join(f"`{n}`" for n in declared) or "none"
                failures.append(CheckFailure(at, f"is not {owner}, which takes {names}"))
            else:
                out[key] = value
            continue
        out[key] = _check(prop.type, value, at, failures)
    for key, prop in declared.items():
        if key in out:
            continue
        if prop.has_default:
            out[key] = prop.default
        elif prop.required:
            failures.append(CheckFailure(f"{path}.{key}" if path else key, "is required"))
    return out


def _check(ty: Type, value: Any, path: str, failures: List[CheckFailure]) -> Any:
    if isinstance(value, (Unknown, OutputRef)):
        return value
    if isinstance(value, Secret):
        return Secret(_check(ty, value.value, path, failures))

    def fail(expected: str) -> Any:
        failures.append(CheckFailure(path, f"expected {expected}, got {kind_of(value)}"))
        return value

    kind = ty.kind
    if kind == "any":
        return value
    if kind == "string":
        return value if isinstance(value, str) else fail("a string")
    if kind == "integer":
        if isinstance(value, bool):
            return fail("an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return fail("an integer")
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return value if ok else fail("a number")
    if kind == "boolean":
        return value if isinstance(value, bool) else fail("a boolean")
    if kind == "enum":
        if isinstance(value, str) and value in ty.values:
            return value
        return fail("one of " + ", ".join(f"`{v}`" for v in ty.values))
    if kind == "array":
        if not isinstance(value, list):
            return fail("an array")
        return [_check(ty.element, item, f"{path}[{i}]", failures) for i, item in enumerate(value)]
    if kind == "map":
        if not isinstance(value, dict):
            return fail("an object")
        return {k: _check(ty.element, v, f"{path}.{k}", failures) for k, v in value.items()}
    if kind == "object":
        if not isinstance(value, dict):
            return fail("an object")
        return _properties(ty.fields, value, path, f"a field of `{path}`", failures)
    raise ValueError(f"unknown type kind {kind!r}")
