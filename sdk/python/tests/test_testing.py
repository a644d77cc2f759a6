"""plugkit.testing: a plugin in the test's process, against a fake host."""

import dataclasses
import unittest

import plugkit
from plugkit import testing


@dataclasses.dataclass
class Config:
    limit: int = 20


def apply(p, cfg):
    p.register_tool(
        plugkit.Tool(
            name="note",
            description="Keeps a note.",
            parameters={"type": "object", "properties": {"text": {"type": "string"}}},
            execute=lambda call: p.call_service("clock", "now", call=call)
            if call.arguments.get("text") == "time"
            else "kept " + call.arguments["text"],
        )
    )
    p.on_pre_execute(filter=lambda call: plugkit.ask("long?") if len(call.arguments.get("text", "")) > cfg.limit else plugkit.PASS, name="length")
    p.set_approver(lambda call, q: plugkit.approve() if "please" in call.arguments["text"] else plugkit.reject("no: " + q))
    p.add_guard(lambda call: "no secrets" if "secret" in call.arguments.get("text", "") else None)
    seen.append("applied")

    def wrap(call, next):
        seen.append("wrap " + call.name)
        return next()

    p.on_execute(wrap=wrap)
    p.on_post_execute(filter=lambda call, out: plugkit.replace("kept [redacted]") if "rude" in str(out.value) else plugkit.PASS_REVIEW)
    p.on_result(lambda call, r: seen.append("result " + ("ok" if r.ok else r.error.code)))


seen = []
NOTES = plugkit.Plugin(name="notes", inject=["tools", "clock"], config=Config, apply=apply)


class TestingTest(unittest.TestCase):
    def setUp(self):
        seen.clear()

    def test_call_through_every_stage(self):
        host = testing.FakeHost(call_service=lambda service, method, args: service + "." + method)
        with testing.start(NOTES, config={"limit": 30}, host=host) as p:
            kinds = sorted(k for k, _, _ in p.registrations)
            self.assertEqual(kinds, ["AddGuard", "Listen", "Listen", "Listen", "Listen", "RegisterTool", "SetApprover"])
            cases = [
                ({"text": "milk"}, testing.Result(True, "kept milk")),
                ({"text": "time"}, testing.Result(True, "clock.now")),
                ({"text": "a secret"}, testing.Result(False, code="DENIED", message="no secrets")),
                ({"text": "a much longer note than that one"}, testing.Result(False, code="DENIED", message="no: long?")),
                ({"text": "a longer note, please, kept it"}, testing.Result(True, "kept a longer note, please, kept it")),
                ({"text": "rude"}, testing.Result(True, "kept [redacted]")),
            ]
            for args, want in cases:
                self.assertEqual(p.call("note", args), want, args)
            self.assertEqual(p.call("other").code, "UNKNOWN_TOOL")
        self.assertEqual(
            seen,
            ["applied", "wrap note", "result ok", "wrap note", "result ok", "result DENIED", "result DENIED",
             "wrap note", "result ok", "wrap note", "result ok", "result UNKNOWN_TOOL"],
        )

    def test_failing_listener_denies(self):
        def apply(p, _):
            p.register_tool(plugkit.Tool(name="t", description="d", execute=lambda call: 1))
            p.on_pre_execute(filter=lambda call: 1 / 0)

        with testing.start(plugkit.Plugin(name="broken", inject=["tools"], apply=apply)) as p:
            r = p.call("t")
            self.assertEqual(r.code, "DENIED")
            self.assertIn("division by zero", r.message)

    def test_refused_registration(self):
        host = testing.FakeHost(register=lambda kind, req: (_ for _ in ()).throw(ValueError("tool name taken")))
        with self.assertRaisesRegex(testing.ApplyError, "tool name taken"):
            testing.start(NOTES, host=host)

    def test_conformance(self):
        self.assertEqual(testing.conformance(NOTES, config={"limit": 5}), [])

    def test_strict_config(self):
        with testing.start(NOTES, apply=False) as p:
            with self.assertRaisesRegex(testing.ApplyError, "limt"):
                p.apply({"limt": 3})


if __name__ == "__main__":
    unittest.main()
