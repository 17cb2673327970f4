import sys
import types
import unittest

from wit_world.imports import types as wit

from plinth.value import UNKNOWN, OutputRef, Secret, decode, encode

# An in-process stand-in for the monitor import, which exists only in program components.
fake = types.ModuleType("wit_world.imports.monitor")
fake.applies = []
fake.register_apply = lambda inputs: fake.applies.append(inputs) or 100 + len(fake.applies)
sys.modules["wit_world.imports.monitor"] = fake
import wit_world.imports  # noqa: E402

wit_world.imports.monitor = fake

from plinth.program import Output, _resume, describe  # noqa: E402


class ProgramTest(unittest.TestCase):
    def test_known_values_apply_at_once(self):
        self.assertEqual(Output.of(21).apply(lambda n: n * 2).__plinth_value__(), 42)
        hidden = Output.secret("pw").apply(lambda p: p + "!").__plinth_value__()
        self.assertEqual(hidden, Secret("pw!"))
        self.assertIs(Output(UNKNOWN).apply(lambda _: self.fail("not run")).__plinth_value__(), UNKNOWN)

    def test_unresolved_outputs_register_an_apply_the_engine_resumes(self):
        ref = Output(OutputRef(9, wit.OutputField_Property(["result"])))
        both = Output.all(ref, "x").apply(lambda parts: f"{parts[0]}-{parts[1]}")
        handle = both.__plinth_value__().handle
        self.assertEqual(_resume(handle, [encode("pet"), encode("x")]), "pet-x")
        with self.assertRaisesRegex(RuntimeError, "no apply"):
            _resume(handle, [encode(1), encode(2)])

    def test_exceptions_name_the_programs_file_and_line(self):
        try:
            exec(compile("def main():\n    raise ValueError('boom')\nmain()\n", "/1/main.py", "exec"), {})
        except ValueError as e:
            text = describe(e)
        self.assertIn("ValueError: boom", text)
        self.assertIn("at main.py:2 in main", text)


if __name__ == "__main__":
    unittest.main()
