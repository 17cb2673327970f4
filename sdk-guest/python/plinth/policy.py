"""Policy packs, in the manner of Pulumi's CrossGuard: a `PolicyPack` holds policies that judge
each resource a deployment is about to create, update or replace, and the whole stack once the
program has ended; `export_policy_pack` adapts it to the `plinth:policy/analyzer` interface.

A pack runs granted nothing; secrets reach it as `Secret` values, which print as `[secret]`,
and the host masks whatever it returns."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .value import decode_properties


class EnforcementLevel(str, Enum):
    """What a violation of a policy does to a run."""

    ADVISORY = "advisory"
    """Shown and recorded; the run goes on."""
    MANDATORY = "mandatory"
    """Fails `preview`, and stops `up` before the violating step runs."""
    DISABLED = "disabled"
    """Not run."""


Level = Union[EnforcementLevel, str]


def _level(value: Level, owner: str) -> EnforcementLevel:
    try:
        return EnforcementLevel(value)
    except ValueError:
        levels = ", ".join(level.value for level in EnforcementLevel)
        raise ValueError(f"{owner}: the enforcement level {value!r} is not one of {levels}") from None


@dataclass
class PolicyConfigSchema:
    """A policy's configuration: JSON Schemas of its properties (`{"type": "integer",
    "minimum": 1, "default": 16}`), which must be given, and whether others may be (by default
    not, so that a misspelt setting is an error rather than ignored)."""

    properties: Dict[str, Dict[str, Any]]
    required: List[str] = field(default_factory=list)
    additional_properties: bool = False

    def defaults(self) -> Dict[str, Any]:
        return {k: p["default"] for k, p in self.properties.items() if "default" in p}

    def text(self) -> str:
        """The schema as JSON Schema text, as the host is told it."""
        return json.dumps({
            "type": "object",
            "properties": self.properties,
            "required": self.required,
            "additionalProperties": self.additional_properties,
        })

    def problem(self, config: Any) -> Optional[str]:
        """The first thing wrong with `config`, or None."""
        if not isinstance(config, dict):
            return "the configuration must be a JSON object"
        for key in self.required:
            if key not in config:
                return f"`{key}` is required"
        for key, value in config.items():
            schema = self.properties.get(key)
            if schema is None:
                if self.additional_properties:
                    continue
                known = ", ".join(self.properties) or "none"
                return f"it takes no setting `{key}` (it takes: {known})"
            problem = _value_problem(schema, value)
            if problem:
                return f"`{key}` {problem}"
        return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _value_problem(schema: Dict[str, Any], value: Any) -> Optional[str]:
    shown = json.dumps(value)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        actual = _json_type(value)
        if actual not in types and not (actual == "integer" and "number" in types):
            wanted = " or ".join(f"{'an' if t[0] in 'aeiou' else 'a'} {t}" for t in types)
            return f"must be {wanted}, not {shown}"
    if "enum" in schema and value not in schema["enum"]:
        return f"must be one of {', '.join(json.dumps(e) for e in schema['enum'])}, not {shown}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"must be at least {schema['minimum']}, not {shown}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"must be at most {schema['maximum']}, not {shown}"
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"must have at least {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"must have at most {schema['maxLength']} characters"
    return None


@dataclass
class PolicyResource:
    """A resource as a policy sees it."""

    resource_type: str
    """The type token, e.g. `random:RandomPassword`."""
    urn: str
    name: str
    """The resource's name: the last part of its URN."""
    props: Dict[str, Any]
    """The inputs its provider checked: secrets as `Secret`, values not known yet as `UNKNOWN`."""
    old_props: Optional[Dict[str, Any]] = None
    """The recorded inputs of a resource being updated or replaced."""
    provider: Optional[str] = None
    parent: Optional[str] = None
    dependencies: List[str] = field(default_factory=list)


class ResourceValidationArgs(PolicyResource):
    """What a resource policy's `validate` is given: the resource, and the policy's
    configuration (`get_config()`: the user's settings over the schema's defaults)."""

    def __init__(self, resource: PolicyResource, config: Dict[str, Any]):
        super().__init__(**resource.__dict__)
        self._config = config

    def get_config(self) -> Dict[str, Any]:
        return dict(self._config)


class StackValidationArgs:
    """What a stack policy's `validate` is given: every resource of the stack."""

    def __init__(self, resources: List[PolicyResource], config: Dict[str, Any]):
        self.resources = resources
        self._config = config

    def get_config(self) -> Dict[str, Any]:
        return dict(self._config)


ReportViolation = Callable[..., None]
"""`report_violation(message, property=None)`; in a stack policy
`report_violation(message, urn=None, property=None)`."""


@dataclass
class _Policy:
    name: str
    description: str
    validate: Any
    enforcement_level: Optional[Level] = None
    config_schema: Optional[PolicyConfigSchema] = None


@dataclass
class ResourceValidationPolicy(_Policy):
    """Judges each resource about to be created, updated or replaced:
    `validate(args: ResourceValidationArgs, report_violation)`, or a list of such functions."""

    validate: Union[Callable[[ResourceValidationArgs, ReportViolation], None],
                    Sequence[Callable[[ResourceValidationArgs, ReportViolation], None]]] = None


@dataclass
class StackValidationPolicy(_Policy):
    """Judges the whole stack once the program has ended:
    `validate(args: StackValidationArgs, report_violation)`."""

    validate: Callable[[StackValidationArgs, ReportViolation], None] = None


Policy = Union[ResourceValidationPolicy, StackValidationPolicy]


class PolicyPack:
    """A policy pack; a pack's module defines one as `pack = PolicyPack("name", policies=[...])`.
    `enforcement_level` is the level of its policies that set none (advisory by default)."""

    def __init__(self, name: str, policies: List[Policy], version: str = "0.0.0",
                 enforcement_level: Level = EnforcementLevel.ADVISORY):
        if not name:
            raise ValueError("a policy pack needs a name")
        self.name = name
        self.version = version
        self.enforcement_level = _level(enforcement_level, f"policy pack `{name}`")
        self.policies = list(policies)
        names = set()
        for policy in self.policies:
            if not isinstance(policy, (ResourceValidationPolicy, StackValidationPolicy)):
                raise TypeError(f"policy pack `{name}`: {policy!r} is not a ResourceValidationPolicy "
                                "or a StackValidationPolicy")
            if not policy.name:
                raise ValueError(f"policy pack `{name}`: a policy has no name")
            if policy.name in names:
                raise ValueError(f"policy pack `{name}`: two policies are named `{policy.name}`")
            names.add(policy.name)
            if policy.enforcement_level is not None:
                _level(policy.enforcement_level, f"policy `{policy.name}`")
            if policy.validate is None:
                raise ValueError(f"policy `{policy.name}` has no `validate`")

    def level_of(self, policy: Policy) -> EnforcementLevel:
        if policy.enforcement_level is None:
            return self.enforcement_level
        return _level(policy.enforcement_level, policy.name)


def _resource(r) -> PolicyResource:
    return PolicyResource(
        resource_type=r.type,
        urn=r.urn,
        name="::".join(r.urn.split("::")[3:]),
        props=decode_properties(r.inputs),
        old_props=None if r.old_inputs is None else decode_properties(r.old_inputs),
        provider=r.provider,
        parent=r.parent,
        dependencies=list(r.dependencies),
    )


def _failed(policy: str, e: BaseException):
    """Says where an exception a policy raised came from (on stderr, which the host shows): a
    policy that cannot judge fails the pack rather than letting a change pass."""
    from .provider import _unexpected
    print(f"policy `{policy}` raised {_unexpected(e)}", file=sys.stderr, flush=True)


def export_policy_pack(pack: PolicyPack) -> type:
    """The class componentize-py instantiates for the `analyzer` export."""
    import wit_world.exports
    from componentize_py_types import Err
    from wit_world.exports import analyzer as wit

    if not isinstance(pack, PolicyPack):
        raise TypeError(f"`pack` must be a PolicyPack, not {type(pack).__name__}")
    wit_levels = {
        EnforcementLevel.ADVISORY: wit.EnforcementLevel.ADVISORY,
        EnforcementLevel.MANDATORY: wit.EnforcementLevel.MANDATORY,
        EnforcementLevel.DISABLED: wit.EnforcementLevel.DISABLED,
    }
    schemas = {p.name: p.config_schema for p in pack.policies}
    configs = {name: (s.defaults() if s else {}) for name, s in schemas.items()}

    def judge(policies, run, make_report):
        violations = []
        for policy in policies:
            report = make_report(policy.name, violations)
            try:
                run(policy, report)
            except Exception as e:
                _failed(policy.name, e)
                raise
        return violations

    class Analyzer(wit_world.exports.Analyzer):
        def info(self):
            return wit.PackInfo(pack.name, pack.version, [
                wit.PolicyInfo(p.name, p.description, wit_levels[pack.level_of(p)],
                               p.config_schema.text() if p.config_schema else "")
                for p in pack.policies
            ])

        def configure(self, config):
            for setting in config:
                schema = schemas.get(setting.policy, False)
                if schema is False:
                    raise Err(f"this pack has no policy `{setting.policy}`")
                try:
                    given = json.loads(setting.config)
                except ValueError as e:
                    raise Err(f"`{setting.policy}`: the configuration is not JSON: {e}")
                problem = (schema or PolicyConfigSchema({})).problem(given)
                if problem:
                    raise Err(f"`{setting.policy}`: {problem}")
                configs[setting.policy] = {**(schema.defaults() if schema else {}), **given}

        def analyze_resource(self, resource):
            judged = _resource(resource)

            def run(policy, report):
                args = ResourceValidationArgs(judged, configs[policy.name])
                checks = policy.validate if isinstance(policy.validate, (list, tuple)) else [policy.validate]
                for check in checks:
                    check(args, report)

            def make_report(name, violations):
                return lambda message, property=None: violations.append(
                    wit.Violation(name, str(message), property or "", ""))

            policies = [p for p in pack.policies if isinstance(p, ResourceValidationPolicy)]
            return judge(policies, run, make_report)

        def analyze_stack(self, resources):
            judged = [_resource(r) for r in resources]

            def run(policy, report):
                policy.validate(StackValidationArgs(judged, configs[policy.name]), report)

            def make_report(name, violations):
                return lambda message, urn=None, property=None: violations.append(
                    wit.Violation(name, str(message), property or "", urn or ""))

            policies = [p for p in pack.policies if isinstance(p, StackValidationPolicy)]
            return judge(policies, run, make_report)

    return Analyzer
