"""plinth's Python SDK: write a provider, a program or a policy pack, get a component."""

from .errors import CheckFailure, ConfigError, InvalidInputs, NotFound, PartiallyCreated
from .policy import (
    EnforcementLevel, PolicyConfigSchema, PolicyPack, PolicyResource, ResourceValidationArgs,
    ResourceValidationPolicy, StackValidationArgs, StackValidationPolicy,
)
from .program import ComponentResource, Context, Output, Resource, ResourceOptions
from .provider import (
    Capabilities, Created, Diff, DirRequest, Function, Provider, ReadResult, ResourceContext,
    ResourceType, State,
)
from .schema import Prop, Type, t
from .value import UNKNOWN, Secret, Unknown

__all__ = [
    "Capabilities", "CheckFailure", "ComponentResource", "ConfigError", "Context", "Created",
    "Diff", "DirRequest", "EnforcementLevel", "Function", "InvalidInputs", "NotFound", "Output",
    "PartiallyCreated", "PolicyConfigSchema", "PolicyPack", "PolicyResource", "Prop", "Provider",
    "ReadResult", "Resource", "ResourceContext", "ResourceOptions", "ResourceType",
    "ResourceValidationArgs", "ResourceValidationPolicy", "Secret", "StackValidationArgs",
    "StackValidationPolicy", "State", "Type", "UNKNOWN", "Unknown", "t",
]
