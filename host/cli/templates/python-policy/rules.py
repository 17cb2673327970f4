"""{{ name }}: a plinth policy pack. It judges each resource a deployment is about to create,
update or replace (and the whole stack once the program has ended); a mandatory violation fails
`preview` and stops `up` before the step runs. plinth builds this project into a component
(the `plinth` module is provided by plinth) and runs it sandboxed, granted nothing. From a
project that uses the `random` provider:

    plinth preview --policy-pack path/to/{{ name }}
    echo '{"string-length": {"minimum": 12}}' > policy.json
    plinth preview --policy-pack path/to/{{ name }} --policy-pack-config policy.json
"""

from plinth import (
    PolicyConfigSchema, PolicyPack, ResourceValidationPolicy, StackValidationPolicy,
)


def string_length(resource, report_violation):
    if resource.resource_type != "random:RandomString":
        return
    minimum = resource.get_config()["minimum"]
    # In a preview, a length computed from another resource's output is not known yet (it is
    # UNKNOWN): `up` judges it again once it is.
    length = resource.props.get("length")
    if isinstance(length, int) and length < minimum:
        report_violation(
            f"`{resource.name}` is {length} characters long; make it at least {minimum}",
            "length")


def one_pet(stack, report_violation):
    pets = [r for r in stack.resources if r.resource_type == "random:RandomPet"]
    for pet in pets[1:]:
        report_violation(f"`{pet.name}` is one pet too many: keep one", pet.urn)


pack = PolicyPack("{{ name }}", version="0.1.0", policies=[
    ResourceValidationPolicy(
        name="string-length",
        description="A random:RandomString is at least `minimum` (default 8) characters long.",
        enforcement_level="mandatory",
        config_schema=PolicyConfigSchema(
            {"minimum": {"type": "integer", "minimum": 1, "default": 8}}),
        validate=string_length,
    ),
    StackValidationPolicy(
        name="one-pet",
        description="A stack names itself with at most one random:RandomPet.",
        enforcement_level="advisory",
        validate=one_pet,
    ),
])
