"""Finds the modules of a Python guest's own code that its entry module can import, wherever
the import statement is: at the top of a module, or inside a function (imported lazily, when
it runs). componentize-py packs only the modules loaded while it builds the component, so plinth
imports these while it does. Written by plinth and run by the Python of its tools.

Reads JSON on stdin: {"entry": module name, "path": [the directories modules are found in,
in search order], "stop": [those of them whose modules are packed otherwise]}. Writes JSON on
stdout: {"modules": [names, in the order found], "files": [every file of those modules],
"external": [names found in none of those directories: the standard library's, or missing]}.
"""

import ast
import json
import os
import re
import sys

# A line that imports, for a file this Python cannot parse (newer syntax than its own).
IMPORT_LINE = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+import\s+([\w\s,.*()]+)|import\s+([\w\s,.]+))")
IMPORT_CALL = re.compile(r"(?:import_module|__import__)\(\s*[\"']([\w.]+)[\"']")


def main():
    request = json.load(sys.stdin)
    path = [os.path.realpath(r) for r in request["path"]]
    stops = [os.path.realpath(r) for r in request["stop"]]
    found = {}  # name -> file
    external = set()
    pending = [request["entry"]]
    while pending:
        name = pending.pop()
        if name in found:
            continue
        file = locate(name, path)
        if file is None:
            external.add(name)
            continue
        if any(is_under(file, stop) for stop in stops):
            continue
        found[name] = file
        # A module's parents are imported before it.
        parts = name.split(".")
        pending.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        is_package = os.path.basename(file) == "__init__.py"
        package = name if is_package else ".".join(parts[:-1])
        for imported in imports(file, package):
            pending.append(imported)
    json.dump(
        {"modules": list(found), "files": list(found.values()), "external": sorted(external)},
        sys.stdout,
    )


def is_under(file, root):
    return os.path.commonpath([file, root]) == root


def locate(name, path):
    """The file of module `name` in the first directory of `path` that has it."""
    if not all(part.isidentifier() for part in name.split(".")):
        return None
    relative = os.path.join(*name.split("."))
    for root in path:
        for candidate in (relative + ".py", os.path.join(relative, "__init__.py")):
            path = os.path.join(root, candidate)
            if os.path.isfile(path):
                return os.path.realpath(path)
    return None


def absolute(module, level, package):
    """The absolute name of `from <level dots><module> import ...` in `package`."""
    if level == 0:
        return module or None
    base = package.split(".") if package else []
    if level - 1 > len(base):
        return None
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else [])) or None


def imports(file, package):
    """Every module `file` may import: each `import` and `from ... import` statement (the
    names it imports may be submodules), and `importlib.import_module` or `__import__` of a
    literal name."""
    with open(file, "rb") as f:
        source = f.read()
    try:
        tree = ast.parse(source, filename=file)
    except (SyntaxError, ValueError):
        yield from imports_by_line(source.decode("utf-8", "replace"), package)
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node.module, node.level, package)
            if base:
                yield base
                for alias in node.names:
                    if alias.name != "*":
                        yield f"{base}.{alias.name}"
        elif isinstance(node, ast.Call) and is_import_call(node):
            name = node.args[0].value
            if name.startswith("."):
                level = len(name) - len(name.lstrip("."))
                name = absolute(name.lstrip("."), level, package)
            if name:
                yield name


def is_import_call(node):
    function = node.func
    called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
    return (
        called in ("import_module", "__import__")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def imports_by_line(text, package):
    for line in text.splitlines():
        yield from IMPORT_CALL.findall(line)
        match = IMPORT_LINE.match(line)
        if not match:
            continue
        module, names, plain = match.groups()
        if plain is not None:
            for item in plain.split(","):
                name = item.split(" as ")[0].strip()
                if name:
                    yield name
            continue
        level = len(module) - len(module.lstrip("."))
        base = absolute(module.lstrip("."), level, package)
        if base:
            yield base
            for item in names.strip("() ").split(","):
                name = item.split(" as ")[0].strip()
                if name and name != "*":
                    yield f"{base}.{name}"


main()
