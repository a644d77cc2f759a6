"""A guard registered in shadow (a rule marked mode = "shadow"): what the
host is told, and what is refused before anything is sent."""

import unittest

import plugkit
from plugkit import testing


def _apply(p, cfg):
    p.add_guard(lambda call: "no lists", tools=["list_dir"], name="no-list", shadow=True, enforce_for=["group:canary"])
    p.add_guard(lambda call: None, name="enforced")


PLUGIN = plugkit.Plugin(name="rules", inject=["tools"], apply=_apply)


class ShadowGuardTest(unittest.TestCase):
    def test_the_host_is_told(self):
        with testing.start(PLUGIN) as p:
            guards = {req.name: req for kind, _, req in p.registrations if kind == "AddGuard"}
            self.assertTrue(guards["no-list"].shadow)
            self.assertEqual(list(guards["no-list"].enforce_for), ["group:canary"])
            self.assertFalse(guards["enforced"].shadow)
            self.assertEqual(list(guards["enforced"].enforce_for), [])

    def test_mistakes_are_refused(self):
        def nameless(p, cfg):
            p.add_guard(lambda call: None, shadow=True)

        def canary_only(p, cfg):
            p.add_guard(lambda call: None, name="x", enforce_for=["group:canary"])

        for apply, want in ((nameless, "needs a name"), (canary_only, "enforce_for without shadow")):
            with self.assertRaises(Exception) as ctx:
                with testing.start(plugkit.Plugin(name="bad", inject=["tools"], apply=apply)):
                    pass
            self.assertIn(want, str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
