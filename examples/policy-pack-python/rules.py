"""password-rules-py, a policy pack in Python for the `random` provider's passwords:

- `password-length` (mandatory): a `random:RandomPassword`'s `length` is at least the
  configured `minimum` (16 unless configured);
- `password-rotation` (advisory, judged on the whole stack once the program has ended): every
  password has `keepers`, so that changing one (a rotation date, say) replaces it.

plinth builds this directory into a component with componentize-py and runs it sandboxed,
granted nothing. From a project using `random`:

    plinth preview --policy-pack ../../examples/policy-pack-python
"""

from plinth import (
    PolicyConfigSchema, PolicyPack, ResourceValidationPolicy, StackValidationPolicy,
)

PASSWORD = "random:RandomPassword"


def password_length(resource, report_violation):
    if resource.resource_type != PASSWORD:
        return
    minimum = resource.get_config()["minimum"]
    # In a preview, a length computed from another resource's output is not known yet (it is
    # UNKNOWN): `up` judges it again once it is.
    length = resource.props.get("length")
    if isinstance(length, int) and length < minimum:
        report_violation(
            f"the password is {length} characters long; make it at least {minimum}", "length")


def password_rotation(stack, report_violation):
    for resource in stack.resources:
        if resource.resource_type == PASSWORD and "keepers" not in resource.props:
            report_violation(
                f"the password `{resource.name}` is never rotated: give it `keepers` "
                "(a rotation date, say), whose change replaces it",
                resource.urn, "keepers")


pack = PolicyPack("password-rules-py", version="0.1.0", policies=[
    ResourceValidationPolicy(
        name="password-length",
        description="A random:RandomPassword is at least `minimum` (default 16) characters long.",
        enforcement_level="mandatory",
        config_schema=PolicyConfigSchema(
            {"minimum": {"type": "integer", "minimum": 1, "default": 16}}),
        validate=password_length,
    ),
    StackValidationPolicy(
        name="password-rotation",
        description="Every random:RandomPassword has `keepers`, so that it can be rotated.",
        enforcement_level="advisory",
        validate=password_rotation,
    ),
])
