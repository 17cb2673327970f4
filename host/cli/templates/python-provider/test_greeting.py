"""The provider's unit tests: `python3 -m unittest` runs them."""

import unittest

from greeting import message, refusal


class GreetingTest(unittest.TestCase):
    def test_a_greeting_names_its_name(self) -> None:
        self.assertEqual(message({"name": "world", "excited": True}), "Hello, world!")
        self.assertEqual(message({"name": "world"}), "Hello, world.")

    def test_an_empty_name_is_refused(self) -> None:
        self.assertEqual(refusal({"name": "  "}), "must not be empty")
        self.assertIsNone(refusal({"name": "world"}))


if __name__ == "__main__":
    unittest.main()
