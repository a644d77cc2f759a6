"""python3 -m plugkit.new: a skeleton that runs and whose test passes."""

import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest

from plugkit import new


class NewTest(unittest.TestCase):
    def test_skeleton(self):
        with tempfile.TemporaryDirectory() as d:
            folder = os.path.join(d, "greeter")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(new.main(["greeter", folder]), 0)
            self.assertIn('plugin "greeter" {', out.getvalue())
            plugin = os.path.join(folder, "plugin.py")
            with open(plugin) as f:
                self.assertEqual(f.readline(), "#!" + new.interpreter() + "\n")
            self.assertTrue(os.access(plugin, os.X_OK))
            # Its own test, in a Python that finds this SDK as the
            # installed one would be found.
            env = {"PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(new.__file__))), "PATH": "/usr/bin:/bin"}
            r = subprocess.run(
                [sys.executable or "python3", "-W", "error", "-B", "-m", "unittest", "discover", "-s", folder, "-t", folder],
                env=env, capture_output=True, text=True, timeout=120,
            )
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("Ran 2 tests", r.stderr)

    def test_refuses(self):
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(new.main(["Bad-Name"]), 2)
            open(os.path.join(d, "x"), "w").close()
            self.assertEqual(new.main(["ok", d]), 1)


if __name__ == "__main__":
    unittest.main()
