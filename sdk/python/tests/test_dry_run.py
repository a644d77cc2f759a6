"""Dry runs (host explain): the mark a call carries, what Describe
declares, and the rules decisions and guards name."""

import logging
import unittest

from plugkit import Plugin, deny
from plugkit._plugin import PluginServer
from plugkit._values import Call, Decision
from plugkit.proto import plugkit_pb2 as pb


class _Ctx:
    """A stand-in for gRPC's servicer context: never cancelled."""

    def add_callback(self, fn):
        return True

    def time_remaining(self):
        return None

    def abort(self, code, details):
        raise AssertionError("aborted: %s %s" % (code, details))


def _server(dry_run):
    plugin = Plugin(name="p", apply=lambda p, c: None, dry_run=dry_run)
    return PluginServer(plugin, host_link=None, max_bytes=1 << 20, log=logging.getLogger("test"))


class DryRunTest(unittest.TestCase):
    def test_call_carries_the_mark(self):
        self.assertTrue(Call(pb.Execution(id="c1", name="t", dry_run=True)).dry_run)
        self.assertFalse(Call(pb.Execution(id="c2", name="t")).dry_run)

    def test_describe_declares_support(self):
        self.assertTrue(_server(True).Describe(pb.DescribeRequest(), _Ctx()).dry_run)
        self.assertFalse(_server(False).Describe(pb.DescribeRequest(), _Ctx()).dry_run)

    def test_decision_rule_round_trips(self):
        d = deny("no", rule="no-secrets")
        self.assertEqual(d.to_proto().rule, "no-secrets")
        self.assertEqual(Decision.from_proto(d.to_proto()), d)

    def test_guard_answers_with_its_name_as_rule(self):
        s = _server(True)
        hid = s.remember(("guard", lambda call: "denied" if call.dry_run else None, "word-limits"))
        resp = s.Guard(pb.GuardRequest(handler_id=hid, execution=pb.Execution(id="c1", name="t", dry_run=True)), _Ctx())
        self.assertEqual((resp.reason, resp.rule, resp.error), ("denied", "word-limits", ""))


if __name__ == "__main__":
    unittest.main()
