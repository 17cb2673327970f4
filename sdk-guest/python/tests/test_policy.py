import unittest

from componentize_py_types import Err
from wit_world.exports import analyzer as wit

from plinth import (
    UNKNOWN, PolicyConfigSchema, PolicyPack, ResourceValidationPolicy, Secret,
    StackValidationPolicy,
)
from plinth.policy import export_policy_pack
from plinth.value import encode

URN = "urn:plinth:dev::p::random:RandomPassword::pw"
seen = []


def password_length(args, report_violation):
    seen.append(args.props)
    minimum = args.get_config()["minimum"]
    length = args.props.get("length")
    if args.resource_type == "random:RandomPassword" and isinstance(length, int) and length < minimum:
        report_violation(f"{args.name} is {length} characters long; make it at least {minimum}", "length")


def count(args, report_violation):
    report_violation(f"{len(args.resources)} resources")
    report_violation("the first", args.resources[0].urn, "length")


PACK = export_policy_pack(PolicyPack("passwords", version="1.2.0", policies=[
    ResourceValidationPolicy(
        name="password-length",
        description="Passwords are long enough.",
        enforcement_level="mandatory",
        config_schema=PolicyConfigSchema({"minimum": {"type": "integer", "minimum": 1, "default": 16}}),
        validate=password_length,
    ),
    StackValidationPolicy(name="count", description="Counts the resources.", validate=count),
]))()


def resource(**inputs):
    return wit.Resource("random:RandomPassword", URN, encode(inputs), None, None, None, [])


class PolicyTest(unittest.TestCase):
    def tearDown(self):
        PACK.configure([wit.PolicyConfig("password-length", "{}")])

    def test_info_describes_the_pack_its_levels_and_schemas(self):
        info = PACK.info()
        self.assertEqual((info.name, info.version), ("passwords", "1.2.0"))
        self.assertEqual([(p.name, p.enforcement_level) for p in info.policies], [
            ("password-length", wit.EnforcementLevel.MANDATORY),
            ("count", wit.EnforcementLevel.ADVISORY),
        ])
        self.assertIn('"additionalProperties": false', info.policies[0].config_schema)
        self.assertEqual(info.policies[1].config_schema, "")

    def test_a_resource_is_judged_with_defaults_then_the_users_configuration(self):
        self.assertEqual(PACK.analyze_resource(resource(length=12)), [wit.Violation(
            "password-length", "pw is 12 characters long; make it at least 16", "length", "")])
        self.assertEqual(PACK.analyze_resource(resource(length=20)), [])
        PACK.configure([wit.PolicyConfig("password-length", '{"minimum": 32}')])
        self.assertIn("at least 32", PACK.analyze_resource(resource(length=20))[0].message)

    def test_secrets_reach_a_policy_as_secrets_that_print_as_secret(self):
        seen.clear()
        PACK.analyze_resource(resource(length=UNKNOWN, seed=Secret("hunter2")))
        self.assertIs(seen[0]["length"], UNKNOWN)
        self.assertIsInstance(seen[0]["seed"], Secret)
        self.assertNotIn("hunter2", f"{seen[0]['seed']} {seen[0]!r}")

    def test_a_configuration_the_schema_refuses_names_what_was_wrong(self):
        for config, expected in [
            ('{"minimum": "long"}', '`password-length`: `minimum` must be an integer, not "long"'),
            ('{"minimum": 0}', "`password-length`: `minimum` must be at least 1, not 0"),
            ('{"minimun": 32}', "`password-length`: it takes no setting `minimun` (it takes: minimum)"),
            ("[1]", "`password-length`: the configuration must be a JSON object"),
            ("{", "`password-length`: the configuration is not JSON"),
        ]:
            with self.assertRaises(Err) as raised:
                PACK.configure([wit.PolicyConfig("password-length", config)])
            self.assertTrue(raised.exception.value.startswith(expected), raised.exception.value)
        with self.assertRaises(Err) as raised:
            PACK.configure([wit.PolicyConfig("nope", "{}")])
        self.assertEqual(raised.exception.value, "this pack has no policy `nope`")

    def test_stack_policies_report_the_stack_and_its_resources(self):
        self.assertEqual(PACK.analyze_stack([resource(length=1)]), [
            wit.Violation("count", "1 resources", "", ""),
            wit.Violation("count", "the first", "length", URN),
        ])

    def test_a_malformed_pack_is_refused_when_it_is_made(self):
        check = lambda args, report: None  # noqa: E731
        for policies, expected in [
            ([StackValidationPolicy("a", "", check), StackValidationPolicy("a", "", check)],
             "two policies are named `a`"),
            ([StackValidationPolicy("a", "", check, enforcement_level="strict")],
             "the enforcement level 'strict' is not one of advisory, mandatory, disabled"),
            ([StackValidationPolicy("a", "")], "has no `validate`"),
        ]:
            with self.assertRaises(ValueError) as raised:
                PolicyPack("p", policies)
            self.assertIn(expected, str(raised.exception))

    def test_a_policy_that_raises_fails_the_call(self):
        def broken(args, report_violation):
            raise KeyError("no")

        pack = export_policy_pack(PolicyPack("broken", [ResourceValidationPolicy("b", "", broken)]))()
        with self.assertRaises(KeyError):
            pack.analyze_resource(resource())


if __name__ == "__main__":
    unittest.main()
