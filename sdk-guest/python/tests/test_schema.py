import unittest

from plinth.schema import t, validate
from plinth.value import UNKNOWN, Secret

INPUTS = {
    "name": t.string(required=True),
    "port": t.integer(default=80),
    "mode": t.enum(["fast", "safe"]),
    "rules": t.array(t.object({"port": t.integer(required=True)}, name="Rule")),
}


class SchemaTest(unittest.TestCase):
    def test_valid_inputs_get_defaults(self):
        inputs, failures = validate(INPUTS, {"name": "web", "mode": "fast"}, "an input of x:Y")
        self.assertEqual(failures, [])
        self.assertEqual(inputs["port"], 80)

    def test_each_failure_names_its_path(self):
        _, failures = validate(INPUTS, {"port": 1.5, "mode": "slow", "rules": [{"port": "x"}],
                                        "extra": 1}, "an input of x:Y")
        by_path = {f.property: f.reason for f in failures}
        self.assertRegex(by_path["extra"], "is not an input of x:Y, which takes `name`")
        self.assertRegex(by_path["port"], "expected an integer, got a number")
        self.assertRegex(by_path["mode"], "one of `fast`, `safe`")
        self.assertRegex(by_path["rules[0].port"], "expected an integer, got a string")
        self.assertEqual(by_path["name"], "is required")

    def test_whole_floats_become_integers_and_bools_are_not_integers(self):
        inputs, failures = validate(INPUTS, {"name": "a", "port": 8080.0})
        self.assertEqual((inputs["port"], failures), (8080, []))
        _, failures = validate(INPUTS, {"name": "a", "port": True})
        self.assertEqual(failures[0].property, "port")

    def test_unknowns_pass_and_secrets_stay_secret(self):
        inputs, failures = validate(INPUTS, {"name": UNKNOWN, "port": Secret(1)})
        self.assertEqual(failures, [])
        self.assertIsInstance(inputs["port"], Secret)


if __name__ == "__main__":
    unittest.main()
