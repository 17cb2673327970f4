"""The provider's logic, apart from the SDK so that its unit tests (test_greeting.py) run
natively: `python3 -m unittest`."""

from typing import Any, Dict, Optional


def message(inputs: Dict[str, Any]) -> str:
    """The greeting of a `{{ name }}:Greeting`'s inputs."""
    end = "!" if inputs.get("excited") else "."
    return f"Hello, {inputs['name']}{end}"


def refusal(inputs: Dict[str, Any]) -> Optional[str]:
    """Why the inputs cannot make a greeting, or None: rules the schema cannot say."""
    return "must not be empty" if not inputs["name"].strip() else None
