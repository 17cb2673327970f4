"""The prebuilt program runtime: componentize-py builds it once per SDK and toolchain, and it
runs any Python program. On each build plinth copies the program's modules (and the PyPI
packages installed for it) into `/.plinth-code/<n>/`, which the runtime sees read-only, with
`plinth-code.json` naming the entry module and the folders to search; the first call imports the
entry module from there. Modules the runtime did not import while it was built (the standard
library's, imported lazily) are read from `/.plinth-library`, the files the interpreter was built
with, also read-only. An edit changes the code only: the runtime is reused as it is."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
from typing import Any, Callable, Optional

from .program import Context, export_program

CODE = "/.plinth-code"
LIBRARY = "/.plinth-library"

# Where componentize-py mounts, while it builds, the interpreter's library, the bindings it
# generates and its own modules: their files are what the runtime reads at run time.
_MOUNTS = {"python": "/python", "world": "/world", "bundled": "/bundled"}

# The build directory is the first folder of componentize-py's path, mounted as `/0`; plinth
# writes this file in it, so that the runtime never writes anywhere else.
_BUILD_MARK = "/0/plinth-runtime-build"
_BUILT_LIBRARY = "/0/library"


def export_library() -> None:
    """Copies the files of the mounts above into the build directory's `library` folder,
    while componentize-py builds the runtime (the host keeps them beside it)."""
    if not os.path.isfile(_BUILD_MARK):
        raise SystemExit(
            f"{_BUILD_MARK} is missing: the Python runtime is built by plinth, from a build "
            "directory that is the first folder of the module path")
    for name, mount in _MOUNTS.items():
        shutil.copytree(mount, f"{_BUILT_LIBRARY}/{name}",
                        ignore=shutil.ignore_patterns("__pycache__"))


def _moved(path: str) -> str:
    """`path` under a build-time mount, as it is at run time."""
    for name, mount in _MOUNTS.items():
        if path == mount or path.startswith(mount + "/"):
            return f"{LIBRARY}/{name}{path[len(mount):]}"
    return path


def _load() -> Callable[[Context], Any]:
    """Imports the program's entry module from its code and returns its `main`."""
    with open(f"{CODE}/plinth-code.json", encoding="utf-8") as f:
        code = json.load(f)
    # Its folders are read-only: no bytecode is written beside the sources.
    sys.dont_write_bytecode = True
    # The order componentize-py gives a whole component: the library and the bindings first.
    sys.path[:] = (
        [_moved(_MOUNTS["python"]), _moved(_MOUNTS["world"])]
        + [f"{CODE}/{folder}" for folder in code["path"]]
        + [_moved(_MOUNTS["bundled"])]
    )
    # Packages imported while the runtime was built search their build-time folders for
    # their submodules: point them where those files are now.
    for module in list(sys.modules.values()):
        search = getattr(module, "__path__", None)
        if isinstance(search, list):
            search[:] = [_moved(p) if isinstance(p, str) else p for p in search]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    name = code["module"]
    module = importlib.import_module(name)
    main = getattr(module, "main", None)
    if not callable(main):
        raise ImportError(f"module `{name}` defines no `main`: a program needs one")
    loaded: Callable[[Context], Any] = main
    return loaded


_main: Optional[Callable[[Context], Any]] = None


def _run(ctx: Context) -> Any:
    global _main
    if _main is None:
        _main = _load()
    return _main(ctx)


def program_callbacks() -> type:
    """The `callbacks` export of the runtime: it runs the program its code holds."""
    return export_program(_run)


