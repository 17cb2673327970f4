import unittest

from wit_world.imports import types as wit

from plinth.value import UNKNOWN, OutputRef, Secret, decode, encode, reveal


class ValueTest(unittest.TestCase):
    def test_integers_stay_integers_and_floats_floats(self):
        wit_value = encode({"port": 8402, "ratio": 0.5, "whole": 3.0, "flag": True})
        root = wit_value.nodes[0]
        nodes = {key: wit_value.nodes[i] for key, i in root.value}
        self.assertEqual(nodes["port"], wit.Node_Integer(8402))
        self.assertEqual(nodes["ratio"], wit.Node_Number(0.5))
        self.assertEqual(nodes["whole"], wit.Node_Number(3.0))
        self.assertEqual(nodes["flag"], wit.Node_Boolean(True), "a bool is not an integer")
        back = decode(wit_value)
        self.assertIsInstance(back["port"], int)
        self.assertIsInstance(back["whole"], float)

    def test_secrets_unknowns_and_references_round_trip(self):
        ref = OutputRef(7, wit.OutputField_Property(["result"]))
        value = {"password": Secret("hunter2"), "later": UNKNOWN, "ref": ref, "list": [1, None, "x"]}
        back = decode(encode(value))
        self.assertEqual(back, value)
        self.assertNotIn("hunter2", repr(back["password"]))
        self.assertEqual(reveal(back)["password"], "hunter2")

    def test_values_that_cannot_travel_name_the_property(self):
        with self.assertRaisesRegex(ValueError, r"`a.b`: nan is not a finite number"):
            encode({"a": {"b": float("nan")}})
        with self.assertRaisesRegex(ValueError, "64-bit"):
            encode(2**64)
        with self.assertRaisesRegex(ValueError, "a set is not"):
            encode({"s": {1}})
        with self.assertRaisesRegex(ValueError, "malformed"):
            decode(wit.Value([wit.Node_Array([4])]))


if __name__ == "__main__":
    unittest.main()
