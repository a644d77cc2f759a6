"""An ask names the deployment's approval route it goes to, on the wire."""

import unittest

import plugkit
from plugkit import _values


class DecisionRouteTest(unittest.TestCase):
    def test_ask_names_route(self):
        d = plugkit.ask("deploy to production?", rule="prod", route="oncall")
        p = d.to_proto()
        self.assertEqual((p.reason, p.rule, p.route), ("deploy to production?", "prod", "oncall"))
        self.assertEqual(_values.Decision.from_proto(p), d)

    def test_route_left_to_the_host(self):
        self.assertEqual(plugkit.ask("sure?").to_proto().route, "")
        self.assertEqual(plugkit.deny("no").route, "")


if __name__ == "__main__":
    unittest.main()
