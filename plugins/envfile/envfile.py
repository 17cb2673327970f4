"""envfile: a provider, in Python, for dotenv files (`KEY=value` lines) in a directory the
project grants it at `/env`. `read` parses the file back, so a line edited out of band shows
as drift on `refresh`, and a deleted file as gone."""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Optional

from plinth import (
    Capabilities, Created, DirRequest, InvalidInputs, Provider, ReadResult, ResourceContext,
    ResourceType, State, t,
)

ROOT = "/env"
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _file(path: str) -> str:
    return os.path.join(ROOT, path)


def _render(values: Dict[str, str]) -> str:
    def quoted(value: str) -> str:
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    return "".join(f"{key}={quoted(values[key])}\n" for key in sorted(values))


def _parse(text: str) -> Dict[str, str]:
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1].replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
        values[key.strip()] = value
    return values


class File(ResourceType):
    token = "envfile:File"
    description = "A dotenv file of plain and secret variables"
    inputs = {
        "path": t.string(required=True, replace_on_change=True,
                         description="The file's path, relative to the granted directory"),
        "vars": t.map(t.string(), default={}, description="Plain variables"),
        "secrets": t.map(t.string(), secret=True, default={},
                         description="Secret variables: sealed in state, hidden in displays"),
    }
    outputs = {
        "path": t.string(required=True),
        "vars": t.map(t.string(), required=True),
        "secrets": t.map(t.string(), secret=True, required=True),
        "lines": t.integer(required=True, description="How many variables the file holds"),
    }

    def check(self, inputs: Dict[str, Any], olds: Optional[Dict[str, Any]],
              ctx: ResourceContext) -> None:
        path = inputs["path"]
        if os.path.isabs(path) or ".." in path.split("/"):
            raise InvalidInputs.of("path", "must be relative to the granted directory, without `..`")
        for group in ("vars", "secrets"):
            for key in inputs[group]:
                if not KEY.match(key):
                    raise InvalidInputs.of(f"{group}.{key}", "is not a variable name")
        both = set(inputs["vars"]) & set(inputs["secrets"])
        if both:
            raise InvalidInputs.of("secrets", f"{', '.join(sorted(both))} also in `vars`")
        return None

    def _write(self, inputs: Dict[str, Any]) -> Dict[str, Any]:
        path = _file(inputs["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        values = {**inputs["vars"], **inputs["secrets"]}
        staging = path + ".plinth-tmp"
        with open(staging, "w") as f:
            f.write(_render(values))
        os.replace(staging, path)
        return {"path": inputs["path"], "vars": inputs["vars"], "secrets": inputs["secrets"],
                "lines": len(values)}

    def create(self, inputs: Dict[str, Any], ctx: ResourceContext) -> Created:
        return Created(inputs["path"], self._write(inputs))

    def read(self, state: State, ctx: ResourceContext) -> Optional[ReadResult]:
        try:
            with open(_file(state.id)) as f:
                values = _parse(f.read())
        except FileNotFoundError:
            return None
        secret_keys = set(state.inputs.get("secrets", {}))
        plain = {k: v for k, v in values.items() if k not in secret_keys}
        secret = {k: v for k, v in values.items() if k in secret_keys}
        inputs = {**state.inputs, "vars": plain, "secrets": secret}
        outputs = {"path": state.id, "vars": plain, "secrets": secret, "lines": len(values)}
        return ReadResult(outputs=outputs, inputs=inputs)

    def update(self, olds: State, news: Dict[str, Any], ctx: ResourceContext) -> Dict[str, Any]:
        return self._write(news)

    def delete(self, state: State, ctx: ResourceContext) -> None:
        try:
            os.remove(_file(state.id))
        except FileNotFoundError:
            pass


provider = Provider(
    name="envfile",
    version="0.1.0",
    description="dotenv files in a granted directory",
    capabilities=Capabilities(dirs=[DirRequest(ROOT, True, "the dotenv files live there")]),
    resources=[File()],
)
