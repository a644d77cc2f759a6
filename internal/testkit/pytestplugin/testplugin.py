#!/usr/bin/env python3
"""The Python twin of internal/testkit/testplugin: it builds, with the Python SDK
only, the behaviours a conformance spec describes
(internal/testkit/conformance/spec.go) from its configuration, and writes what only
the process can see to one file per named log in log_dir. The remote
package's conformance harness runs every case against it (TestConformancePython).
"""

import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import plugkit
from plugkit import Outcome, Plugin, Tool


@dataclass
class Config:
    spec: dict
    log_dir: str
    gate: str = ""
    apply_log: str = ""
    provides: list = field(default_factory=list)
    control: str = ""
    late_tools: Optional[list] = None
    crash_on_apply: str = ""
    crash_after_apply: str = ""


class Logs:
    def __init__(self, folder):
        self.folder = folder
        self.lock = threading.Lock()

    def add(self, name, entry):
        if not name or not self.folder:
            return
        with self.lock:
            with open(os.path.join(self.folder, name + ".log"), "a") as f:
                f.write(entry + "\n")


def seconds(ns):
    """A spec's durations are Go's: integer nanoseconds."""
    return (ns or 0) / 1e9


def number(call, field_):
    v = call.arguments.get(field_) if isinstance(call.arguments, dict) else None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def outcome_word(ok, code):
    return "ok" if ok else code


def hang(call):
    call.cancelled.wait()
    raise plugkit.Cancelled("cancelled")


def tool(logs, s):
    body = s.get("body")
    log = s.get("log", "")
    runs = [0]
    lock = threading.Lock()

    def run(call, n):
        if body == "add":
            a = call.arguments
            return a.get("a", 0) + a.get("b", 0)
        if body == "echo":
            return call.arguments
        if body == "sleep":
            if s.get("ignore_cancel"):
                time.sleep(seconds(s.get("sleep")))
            else:
                call.sleep(seconds(s.get("sleep")))
            return "slept"
        if body in ("error", "panic"):
            raise RuntimeError(s.get("message", ""))
        if body == "script":
            step = s["script"][min(n, len(s["script"])) - 1]
            call.sleep(seconds(step.get("sleep")))
            if step.get("error"):
                raise RuntimeError(step["error"])
            return "attempt %d" % n
        raise ValueError("tool %r: unknown body %r" % (s["name"], body))

    def execute(call):
        with lock:
            runs[0] += 1
            n = runs[0]
        logs.add(log, "run")
        try:
            v = run(call, n)
        except BaseException:
            logs.add(log, "cancelled" if call.cancelled.is_set() else "done")
            raise
        logs.add(log, "done")
        return v

    if body == "none":
        execute = None
    elif body not in ("add", "echo", "sleep", "error", "panic", "script"):
        raise ValueError("tool %r: unknown body %r" % (s["name"], body))
    return Tool(
        name=s["name"],
        description=s.get("description", ""),
        execute=execute,
        parameters=s.get("parameters") or None,
        timeout=seconds(s.get("timeout")),
        idempotent=s.get("idempotent", False),
        destructive=s.get("destructive", False),
    )


def pre(logs, s):
    b, reason, log = s["behaviour"], s.get("reason", ""), s.get("log", "")

    def called(call):
        call.sleep(seconds(s.get("sleep")))
        logs.add(log, "called")

    if b == "pass":
        def f(call):
            called(call)
            return plugkit.PASS
        return {"filter": f}
    if b == "hang-filter":
        def f(call):
            logs.add(log, "called")
            hang(call)
        return {"filter": f}

    def decide(call, next_):
        if b == "allow":
            return plugkit.allow()
        if b == "deny":
            return plugkit.deny(reason)
        if b == "deny-when-negative":
            n = number(call, s.get("field", ""))
            return plugkit.deny(reason) if n is not None and n < 0 else next_()
        if b == "ask":
            return plugkit.ask(reason)
        if b == "override-allow":
            next_()
            return plugkit.allow()
        if b == "panic":
            raise RuntimeError("pre-execute listener panics")
        if b == "error":
            raise RuntimeError(reason)
        if b == "unknown":
            return plugkit.Decision(42, reason)
        if b == "hang":
            hang(call)
        raise ValueError("unknown pre-execute behaviour %r" % b)

    if b not in ("allow", "deny", "deny-when-negative", "ask", "override-allow", "panic", "error", "unknown", "hang"):
        raise ValueError("unknown pre-execute behaviour %r" % b)

    def w(call, next_):
        called(call)
        return decide(call, next_)
    return {"wrap": w}


def guard(logs, s):
    b, reason = s["behaviour"], s.get("reason", "")

    def decide(call):
        if b == "silent":
            return None
        if b == "deny":
            return reason
        if b == "deny-when-greater":
            n = number(call, s.get("field", ""))
            return reason if n is not None and n > s.get("limit", 0) else None
        if b == "deny-when-equal":
            return reason if call.arguments.get(s.get("field", "")) == s.get("value") else None
        if b == "panic":
            raise RuntimeError("guard panics")
        if b == "error":
            raise RuntimeError(reason)
        if b == "hang":
            hang(call)

    if b not in ("silent", "deny", "deny-when-greater", "deny-when-equal", "panic", "error", "hang"):
        raise ValueError("unknown guard behaviour %r" % b)

    def check(call):
        call.sleep(seconds(s.get("sleep")))
        logs.add(s.get("log", ""), "called")
        return decide(call)
    return check


def exec_(logs, s):
    b, log = s["behaviour"], s.get("log", "")
    if b == "record":
        def w(call, next_):
            logs.add(log, "start")
            o = next_()
            logs.add(log, "end " + outcome_word(o.ok, o.error.code if o.error else ""))
            return o
        return {"wrap": w}
    if b == "short-circuit":
        value = json.loads(s["value"])

        def f(call):
            logs.add(log, "called")
            return Outcome.success(value)
        return {"filter": f}
    if b in ("hang", "hang-filter"):
        def h(call, *_):
            logs.add(log, "called")
            hang(call)
        return {"wrap" if b == "hang" else "filter": h}
    raise ValueError("unknown execute behaviour %r" % b)


def post(logs, s):
    b, log = s["behaviour"], s.get("log", "")

    def answer():
        if b == "pass":
            return plugkit.PASS_REVIEW
        if b == "replace":
            return plugkit.replace(json.loads(s["value"]))
        if b == "block":
            return plugkit.block(s.get("reason", ""))
        if b == "error":
            raise RuntimeError(s.get("reason", ""))
        if b == "panic":
            raise RuntimeError("post-execute listener panics")

    if b in ("pass", "replace", "block", "error", "panic"):
        if b == "replace":
            json.loads(s["value"])

        def f(call, outcome):
            call.sleep(seconds(s.get("sleep")))
            logs.add(log, "called")
            return answer()
        return {"filter": f}
    if b == "wrap-pass":
        def w(call, outcome, next_):
            call.sleep(seconds(s.get("sleep")))
            logs.add(log, "called")
            return next_()
        return {"wrap": w}
    if b in ("hang", "hang-filter"):
        def h(call, outcome, *_):
            logs.add(log, "called")
            hang(call)
        return {"wrap" if b == "hang" else "filter": h}
    raise ValueError("unknown post-execute behaviour %r" % b)


def observer(logs, s):
    def observe(call, result):
        if s.get("sleep"):
            time.sleep(seconds(s["sleep"]))  # an observer is not cancelled: it records
        line = call.name + " " + outcome_word(result.ok, result.error.code if result.error else "")
        if s["behaviour"] == "record-id":
            line = call.id + " " + line
        logs.add(s.get("log", ""), line)
        if s["behaviour"] == "panic":
            raise RuntimeError("observer panics")
    return observe


def approver(logs, s):
    b, reason, log = s["behaviour"], s.get("reason", ""), s.get("log", "")
    if b not in ("approve", "refuse", "error", "hang"):
        raise ValueError("unknown approver behaviour %r" % b)

    def approve(call, question):
        logs.add(log, "asked " + question)
        if b == "approve":
            return plugkit.approve()
        if b == "refuse":
            return plugkit.reject(reason)
        if b == "error":
            raise RuntimeError(reason)
        call.cancelled.wait()
        logs.add(log, "cancelled")
        raise plugkit.Cancelled("cancelled")
    return approve


def wait_gate(gate):
    while gate and os.path.exists(gate):
        time.sleep(0.005)


def crash(msg):
    os.write(2, (msg + "\n").encode())
    os._exit(3)


def apply(p, cfg):
    logs = Logs(cfg.log_dir)
    logs.add(cfg.apply_log, "apply %d" % os.getpid())
    if cfg.crash_on_apply:
        crash(cfg.crash_on_apply)
    wait_gate(cfg.gate)
    s = cfg.spec
    for t in s.get("tools") or []:
        p.register_tool(tool(logs, t))
    for l in s.get("pre") or []:
        p.on_pre_execute(tools=l.get("tools") or (), **pre(logs, l))
    for g in s.get("guards") or []:
        p.add_guard(guard(logs, g), tools=g.get("tools") or ())
    for e in s.get("exec") or []:
        p.on_execute(tools=e.get("tools") or (), **exec_(logs, e))
    for l in s.get("post") or []:
        p.on_post_execute(tools=l.get("tools") or (), **post(logs, l))
    for o in s.get("observers") or []:
        p.on_result(observer(logs, o), tools=o.get("tools") or ())
    if s.get("approver"):
        p.set_approver(approver(logs, s["approver"]))
    for name in cfg.provides:
        p.provide(name, {"echo": lambda args, caller: args, "whoami": lambda args, caller: s["name"], "pid": lambda args, caller: os.getpid()})
    if cfg.crash_after_apply:
        threading.Timer(0.1, crash, (cfg.crash_after_apply,)).start()


def from_env(key, default):
    v = os.environ.get(key)
    return json.loads(v) if v else default


plugkit.serve(Plugin(
    name="testplugin",
    config=Config,
    inject=from_env("TESTPLUGIN_INJECT", ["tools"]),
    provides=from_env("TESTPLUGIN_PROVIDES", []),
    apply=apply,
))
