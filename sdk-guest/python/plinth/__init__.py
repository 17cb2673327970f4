"""plinth's Python SDK: write a provider or a program, get a component."""

from .errors import CheckFailure, ConfigError, InvalidInputs, NotFound, PartiallyCreated
from .program import ComponentResource, Context, Output, Resource, ResourceOptions
from .provider import (
    Capabilities, Created, Diff, DirRequest, Function, Provider, ReadResult, ResourceContext,
    ResourceType, State,
)
from .schema import Prop, Type, t
from .value import UNKNOWN, Secret, Unknown

__all__ = [
    "Capabilities", "CheckFailure", "ComponentResource", "ConfigError", "Context", "Created",
    "Diff", "DirRequest", "Function", "InvalidInputs", "NotFound", "Output", "PartiallyCreated",
    "Prop", "Provider", "ReadResult", "Resource", "ResourceContext", "ResourceOptions",
    "ResourceType", "Secret", "State", "Type", "UNKNOWN", "Unknown", "t",
]
