import unittest

from componentize_py_types import Err
from wit_world.exports import provider as wit

from plinth import Created, InvalidInputs, Provider, ResourceType, t
from plinth.provider import export_provider
from plinth.value import UNKNOWN, Secret, decode, encode

URN = "urn:plinth:dev::p::kv:Entry::e"
created = []


class Entry(ResourceType):
    token = "kv:Entry"
    inputs = {"key": t.string(required=True, replace_on_change=True), "value": t.any()}
    outputs = {"key": t.string(), "value": t.any(), "size": t.integer()}

    def check(self, inputs, olds, ctx):
        if "/" in inputs["key"]:
            raise InvalidInputs.of("key", "must not contain /")

    def create(self, inputs, ctx):
        if inputs["key"] == "boom":
            return Created(inputs["missing"], {})
        created.append(inputs)
        return Created(inputs["key"], {**inputs, "size": len(str(inputs["value"]))})

    def update(self, olds, news, ctx):
        return {**news, "size": 0}


KV = export_provider(Provider("kv", "0.1.0", [Entry()]))()


class ProviderTest(unittest.TestCase):
    def test_info_describes_the_schema(self):
        info = KV.info()
        self.assertEqual(info.resources[0].token, "kv:Entry")
        self.assertTrue(info.resources[0].inputs[0].replace_on_change)

    def test_check_validates_then_runs_the_providers_rules(self):
        result = KV.check(URN, None, encode({"key": 1}))
        self.assertEqual(result.failures[0].property, "key")
        with self.assertRaises(Err) as raised:
            KV.check(URN, None, encode({"key": "a/b"}))
        self.assertIsInstance(raised.exception.value, wit.ProviderError_Invalid)

    def test_a_preview_plans_and_secrets_stay_secret(self):
        planned = decode(KV.create(URN, encode({"key": "k", "value": Secret("v")}), True).outputs)
        self.assertEqual(created, [])
        self.assertEqual((planned["key"], planned["size"]), ("k", UNKNOWN))
        self.assertIsInstance(planned["value"], Secret)
        done = KV.create(URN, encode({"key": "k", "value": Secret("v")}), False)
        self.assertEqual(created, [{"key": "k", "value": "v"}], "the provider sees plaintext")
        self.assertIsInstance(decode(done.outputs)["value"], Secret)

    def test_the_default_diff_replaces_on_replace_on_change_only(self):
        old = encode({"key": "k", "value": 1})
        diff = KV.diff(URN, "k", old, old, encode({"key": "k2", "value": 2}))
        self.assertEqual((diff.changed, diff.replaces), (["key", "value"], ["key"]))

    def test_an_unexpected_exception_names_its_type_and_place(self):
        with self.assertRaises(Err) as raised:
            KV.create(URN, encode({"key": "boom"}), False)
        message = raised.exception.value.value
        self.assertRegex(message, r"^KeyError: 'missing' \(at .*test_provider.py:\d+ in create\)$")

    def test_failures_are_typed(self):
        with self.assertRaises(Err) as raised:
            KV.create("urn:plinth:dev::p::kv:Nope::n", encode({}), False)
        self.assertEqual(raised.exception.value, wit.ProviderError_UnknownType("kv:Nope"))


if __name__ == "__main__":
    unittest.main()


class Login(ResourceType):
    token = "kv:Login"
    inputs = {
        "name": t.string(required=True),
        "token_wo": t.string(write_only="token_version"),
        "token_version": t.integer(),
    }


class WriteOnlyTest(unittest.TestCase):
    def test_write_only_inputs_are_stated_with_their_version_and_secret(self):
        from plinth.provider import export_write_only

        stated = export_write_only(Provider("kv", "0.1.0", [Entry(), Login()]))().write_only_inputs()
        self.assertEqual([(m.type, m.name, m.version) for m in stated],
                         [("kv:Login", "token_wo", "token_version")])
        self.assertTrue(Login.inputs["token_wo"].secret)
        self.assertFalse(Login.inputs["token_version"].secret)
