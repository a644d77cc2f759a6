"""Test a plugin without a host: ``plugkit.testing``.

``start(plugin, config)`` serves the plugin in the test's process over
real gRPC (Unix sockets in a temporary folder) against a fake host, applies
it, and returns a ``Harness`` whose ``call`` runs a tool call through every
stage the plugin registered, the way the host's pipeline does: stage-1
listeners (a wrapper's ``next()`` runs the rest of the chain; an Ask goes
to the plugin's approver, and is denied when it has none), guards, stage-3
listeners around the tool, stage-4 listeners, observers. A listener that
fails denies (or blocks) the call, as the host would. ``FakeHost``'s
fields set what the plugin's calls back get (a service, a tool through the
pipeline, a refused registration). ``conformance(plugin, config)`` runs the
protocol cases that apply to any one plugin and returns what failed.

The Go twin is the SDK module's sdktest package.
"""

import concurrent.futures
import json
import logging
import os
import shutil
import tempfile
import threading
import typing

import grpc

from ._plugin import PROTOCOL_VERSIONS, PluginServer
from .proto import plugkit_pb2 as pb
from .proto import plugkit_pb2_grpc as pb_grpc

__all__ = ["ApplyError", "FakeHost", "Harness", "Result", "conformance", "start"]


class Result(typing.NamedTuple):
    """What a caller gets: ok and value, or an error code and message."""

    ok: bool
    value: typing.Any = None
    code: str = ""
    message: str = ""


class ApplyError(Exception):
    """The plugin's Apply failed; the message is the plugin's."""


class FakeHost(pb_grpc.HostServicer):
    """The host the plugin calls back. Each field is optional:

    - ``register(kind, request)`` answers a registration ("RegisterTool",
      "AddGuard", "Listen", "SetApprover", "Provide", "Contribute") with an
      id, or raises to refuse it; unset, every registration is accepted;
    - ``call_service(service, method, args)`` answers the plugin's service
      calls with a JSON value; unset, they fail;
    - ``execute_tool(name, arguments)`` answers the plugin's tool calls
      with a ``Result``; unset, they fail.
    """

    def __init__(self, register=None, call_service=None, execute_tool=None):
        self.register, self.call_service, self.execute_tool = register, call_service, execute_tool
        self._lock = threading.Lock()
        self._n = 0
        #: What the plugin registered and did not dispose: (kind, id, request), in order.
        self.registrations = []
        #: What the plugin reported (report_problem).
        self.problems = []
        self._rests = {}

    def _reg(self, kind, req, context, reply):
        try:
            rid = self.register(kind, req) if self.register else None
        except Exception as e:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
        with self._lock:
            self._n += 1
            rid = rid or "reg-%d" % self._n
            self.registrations.append((kind, rid, req))
        return reply(registration_id=rid)

    def RegisterTool(self, req, context):
        return self._reg("RegisterTool", req, context, pb.RegisterToolResponse)

    def RegisterTools(self, req, context):
        for rid in req.dispose_registration_ids:
            self.Dispose(pb.DisposeRequest(registration_id=rid), context)
        results = []
        for t in req.tools:
            try:
                rid = self.register("RegisterTool", t) if self.register else None
            except Exception as e:
                results.append(pb.RegisterToolsResult(error=str(e)))
                continue
            with self._lock:
                self._n += 1
                rid = rid or "reg-%d" % self._n
                self.registrations.append(("RegisterTool", rid, t))
            results.append(pb.RegisterToolsResult(registration_id=rid))
        return pb.RegisterToolsResponse(results=results)

    def AddGuard(self, req, context):
        return self._reg("AddGuard", req, context, pb.AddGuardResponse)

    def Listen(self, req, context):
        return self._reg("Listen", req, context, pb.ListenResponse)

    def SetApprover(self, req, context):
        return self._reg("SetApprover", req, context, pb.SetApproverResponse)

    def Provide(self, req, context):
        return self._reg("Provide", req, context, pb.ProvideResponse)

    def Contribute(self, req, context):
        return self._reg("Contribute", req, context, pb.ContributeResponse)

    def Dispose(self, req, context):
        with self._lock:
            before = len(self.registrations)
            self.registrations = [r for r in self.registrations if r[1] != req.registration_id]
            if len(self.registrations) == before:
                context.abort(grpc.StatusCode.NOT_FOUND, "fake host: no registration %r" % req.registration_id)
        return pb.DisposeResponse()

    def CallService(self, req, context):
        if self.call_service is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "fake host: call_service not set")
        try:
            value = self.call_service(req.service, req.method, json.loads(req.args_json or b"null"))
        except Exception as e:
            return pb.HostCallServiceResponse(error=str(e))
        return pb.HostCallServiceResponse(result_json=json.dumps(value).encode())

    def ExecuteTool(self, req, context):
        if self.execute_tool is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "fake host: execute_tool not set")
        r = self.execute_tool(req.name, json.loads(req.arguments_json or b"{}"))
        res = pb.ToolResult(ok=r.ok, value_json=json.dumps(r.value).encode() if r.ok else b"")
        if not r.ok:
            res.error.code, res.error.message = r.code, r.message
        return pb.HostExecuteToolResponse(result=res)

    def ReportProblem(self, req, context):
        with self._lock:
            self.problems.append(req.problem)
        return pb.ReportProblemResponse()

    def Next(self, req, context):
        with self._lock:
            rest = self._rests.get(req.call_token)
        if rest is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "fake host: call token %r is not valid" % req.call_token)
        return rest()

    def _open(self, rest):
        with self._lock:
            self._n += 1
            tok = "token-%d" % self._n
            self._rests[tok] = rest
        return tok

    def _close(self, tok):
        with self._lock:
            self._rests.pop(tok, None)


class _Link:
    """The plugin's host connection, to the fake host's socket."""

    def __init__(self, address, max_bytes):
        self._channel = grpc.insecure_channel("unix:" + address, options=_options(max_bytes))
        self._stub = pb_grpc.HostStub(self._channel)

    def connect(self, broker_id):
        pass

    def stub(self):
        return self._stub

    def close(self):
        pass

    def shut(self):
        self._channel.close()


def _options(max_bytes):
    return [("grpc.max_receive_message_length", max_bytes), ("grpc.max_send_message_length", max_bytes)]


_MAX = 64 << 20
# Every call has a deadline, as the host gives it: a bound against a hang,
# and a wrapper's next() takes its own from it.
_TIMEOUT = 60


def start(plugin, config=None, host=None, apply=True):
    """Serves plugin against host (a FakeHost; None: one with every default)
    and, unless apply is False, applies config (a dict; None: {}). Use the
    result as a context manager, or call its close()."""
    h = Harness(plugin, host or FakeHost())
    if apply:
        try:
            h.apply(config)
        except BaseException:
            h.close()
            raise
    return h


class Harness:
    """A plugin under test; see the module's documentation."""

    def __init__(self, plugin, host):
        self.host = host
        self._dir = tempfile.mkdtemp(prefix="plugkit-test-")
        self._servers = []
        host_sock, plugin_sock = os.path.join(self._dir, "host"), os.path.join(self._dir, "plugin")
        hs = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=16), options=_options(_MAX))
        pb_grpc.add_HostServicer_to_server(host, hs)
        hs.add_insecure_port("unix:" + host_sock)
        hs.start()
        self._servers.append(hs)
        self._link = _Link(host_sock, _MAX)
        self.server = PluginServer(plugin, self._link, _MAX, logging.getLogger("plugkit.testing"), PROTOCOL_VERSIONS[-1])
        ps = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=16), options=_options(_MAX))
        pb_grpc.add_PluginServicer_to_server(self.server, ps)
        ps.add_insecure_port("unix:" + plugin_sock)
        ps.start()
        self._servers.append(ps)
        self._channel = grpc.insecure_channel("unix:" + plugin_sock, options=_options(_MAX))
        #: The Plugin service's stub, for a test of the protocol itself.
        self.client = pb_grpc.PluginStub(self._channel)
        #: The plugin's Describe answer.
        self.describe = self.client.Describe(pb.DescribeRequest(), timeout=_TIMEOUT)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Stops the plugin's server and the fake host (no Shutdown)."""
        self._channel.close()
        for s in reversed(self._servers):
            s.stop(None).wait()
        self._servers = []
        self._link.shut()
        self.server._calls.shutdown(wait=True)
        shutil.rmtree(self._dir, ignore_errors=True)

    def apply(self, config=None):
        """Applies config as the host does, its registrations forgotten first."""
        with self.host._lock:
            self.host.registrations = []
        r = self.client.Apply(pb.ApplyRequest(config_json=json.dumps(config or {}).encode(), host_broker_id=1), timeout=_TIMEOUT)
        if r.error:
            raise ApplyError(r.error)

    def shutdown(self):
        """Asks the plugin to stop, as the host does before it ends the process."""
        r = self.client.Shutdown(pb.ShutdownRequest(), timeout=_TIMEOUT)
        if r.error:
            raise RuntimeError("Shutdown failed: " + r.error)

    @property
    def registrations(self):
        with self.host._lock:
            return list(self.host.registrations)

    def tools(self):
        """The names of the tools the plugin registered."""
        return [req.tool.name for kind, _, req in self.registrations if kind == "RegisterTool"]

    def execution(self, tool, arguments=None):
        e = pb.Execution(id="test-1", name=tool, arguments_json=json.dumps(arguments or {}).encode(), caller="plugkit.testing")
        for kind, _, req in self.registrations:
            if kind == "RegisterTool" and req.tool.name == tool:
                e.tool.CopyFrom(req.tool)
        return e

    def _listeners(self, stage, tool):
        return [r for k, _, r in self.registrations if k == "Listen" and r.stage == stage and (not r.tools or tool in r.tools)]

    # The stages; each raises _Failed when a listener fails.

    def pre_execute(self, e, ls=None):
        ls = self._listeners(pb.STAGE_PRE_EXECUTE, e.name) if ls is None else ls
        for i, l in enumerate(ls):
            req = pb.PreExecuteRequest(handler_id=l.handler_id, execution=e)
            tok = None
            if l.mode == pb.LISTEN_MODE_WRAP:
                tok = req.call_token = self.host._open(lambda i=i: pb.NextResponse(pre_execute=self.pre_execute(e, ls[i + 1 :])))
            r = self.client.PreExecute(req, timeout=_TIMEOUT)
            if tok:
                self.host._close(tok)
            if r.error:
                raise _Failed("stage-1 listener %s failed: %s" % (l.name or l.handler_id, r.error))
            if r.decision.verdict == pb.VERDICT_UNSPECIFIED:
                raise _Failed("stage-1 listener %s answered no verdict" % (l.name or l.handler_id))
            if tok or r.decision.verdict != pb.VERDICT_PASS:
                return r.decision
        return pb.Decision(verdict=pb.VERDICT_PASS)

    def guard(self, e):
        for kind, _, g in self.registrations:
            if kind != "AddGuard" or (g.tools and e.name not in g.tools):
                continue
            r = self.client.Guard(pb.GuardRequest(handler_id=g.handler_id, execution=e), timeout=_TIMEOUT)
            if r.error:
                raise _Failed("guard %s failed: %s" % (g.name or g.handler_id, r.error))
            if r.reason:
                return r.reason
        return None

    def execute(self, e, ls=None):
        ls = self._listeners(pb.STAGE_EXECUTE, e.name) if ls is None else ls
        for i, l in enumerate(ls):
            req = pb.WrapExecuteRequest(handler_id=l.handler_id, execution=e)
            tok = None
            if l.mode == pb.LISTEN_MODE_WRAP:
                tok = req.call_token = self.host._open(lambda i=i: pb.NextResponse(execute=self.execute(e, ls[i + 1 :])))
            r = self.client.WrapExecute(req, timeout=_TIMEOUT)
            if tok:
                self.host._close(tok)
            if r.error:
                return pb.Outcome(ok=False, error=pb.ToolError(code="TOOL_ERROR", message=r.error))
            if not getattr(r, "pass"):  # "pass" is a keyword in Python
                return r.outcome
        tool = [req for kind, _, req in self.registrations if kind == "RegisterTool" and req.tool.name == e.name][0]
        r = self.client.ExecuteTool(pb.ExecuteToolRequest(handler_id=tool.handler_id, execution=e), timeout=_TIMEOUT)
        if r.error:
            return pb.Outcome(ok=False, error=pb.ToolError(code="TOOL_ERROR", message=r.error))
        return pb.Outcome(ok=True, value_json=r.value_json)

    def post_execute(self, e, outcome, ls=None):
        ls = self._listeners(pb.STAGE_POST_EXECUTE, e.name) if ls is None else ls
        for i, l in enumerate(ls):
            req = pb.PostExecuteRequest(handler_id=l.handler_id, execution=e, outcome=outcome)
            tok = None
            if l.mode == pb.LISTEN_MODE_WRAP:
                tok = req.call_token = self.host._open(lambda i=i: pb.NextResponse(post_execute=self.post_execute(e, outcome, ls[i + 1 :])))
            r = self.client.PostExecute(req, timeout=_TIMEOUT)
            if tok:
                self.host._close(tok)
            if r.error:
                raise _Failed("stage-4 listener %s failed: %s" % (l.name or l.handler_id, r.error))
            if r.review.verdict == pb.REVIEW_VERDICT_UNSPECIFIED:
                raise _Failed("stage-4 listener %s answered no verdict" % (l.name or l.handler_id))
            if tok or r.review.verdict != pb.REVIEW_VERDICT_PASS:
                return r.review
        return pb.Review(verdict=pb.REVIEW_VERDICT_PASS)

    def _approve(self, e, question):
        for kind, _, a in self.registrations:
            if kind == "SetApprover":
                r = self.client.Approve(pb.ApproveRequest(handler_id=a.handler_id, execution=e, question=question), timeout=_TIMEOUT)
                return r.approved, r.error or r.reason
        return False, question + ": no approver"

    def call(self, tool, arguments=None):
        """Calls tool through every stage of the plugin; returns a Result."""
        e = self.execution(tool, arguments)
        res = self._call(e)
        obs = self._listeners(pb.STAGE_RESULT, tool)
        if obs:
            pr = pb.ToolResult(id=e.id, ok=res.ok, value_json=json.dumps(res.value).encode() if res.value is not None else b"")
            if not res.ok:
                pr.error.code, pr.error.message = res.code, res.message
            got = self.client.Observe(iter([pb.ObserveRequest(handler_id=l.handler_id, execution=e, result=pr) for l in obs]), timeout=_TIMEOUT)
            if got.received != len(obs):
                raise AssertionError("the plugin acknowledged %d results of %d" % (got.received, len(obs)))
        return res

    def _call(self, e):
        if e.name not in self.tools():
            return Result(False, code="UNKNOWN_TOOL", message="unknown tool " + e.name)
        try:
            d = self.pre_execute(e)
            if d.verdict == pb.VERDICT_DENY:
                return Result(False, code="DENIED", message=d.reason)
            if d.verdict == pb.VERDICT_ASK:
                ok, why = self._approve(e, d.reason)
                if not ok:
                    return Result(False, code="DENIED", message=why)
            reason = self.guard(e)
            if reason:
                return Result(False, code="DENIED", message=reason)
        except (_Failed, grpc.RpcError) as err:
            return Result(False, code="DENIED", message=str(err))
        o = self.execute(e)
        try:
            rv = self.post_execute(e, o)
        except (_Failed, grpc.RpcError) as err:
            return Result(False, code="BLOCKED", message=str(err))
        if rv.verdict == pb.REVIEW_VERDICT_BLOCK:
            return Result(False, code="BLOCKED", message=rv.feedback)
        value = json.loads(o.value_json) if o.value_json else None
        if rv.verdict == pb.REVIEW_VERDICT_REPLACE:
            value = json.loads(rv.value_json) if rv.value_json else None
        if not o.ok:
            return Result(False, value=value, code=o.error.code, message=o.error.message)
        return Result(True, value=value)


class _Failed(Exception):
    """A listener failed: the host denies or blocks the call."""


def conformance(plugin, config=None, host=None):
    """Runs the protocol cases that apply to any one plugin; returns the
    failures, each a sentence ([] when it conforms)."""
    fails = []
    with start(plugin, apply=False, host=host) as h:
        d = h.describe
        if not d.name:
            fails.append("Describe: no name")
        if d.protocol_version not in PROTOCOL_VERSIONS:
            fails.append("Describe: protocol version %d" % d.protocol_version)
        try:
            if not isinstance(json.loads(d.config_schema_json), dict):
                fails.append("Describe: the config schema is not a JSON object")
        except ValueError as e:
            fails.append("Describe: the config schema is not JSON: %s" % e)
        bad = dict(config or {}, plugkit_no_such_key=True)
        try:
            h.apply(bad)
            fails.append("Apply with an unknown config key succeeded")
        except ApplyError as e:
            if "plugkit_no_such_key" not in str(e):
                fails.append("Apply with an unknown config key: the error does not name it: %s" % e)
    with start(plugin, config, host=host) as h:
        if h.registrations and "tools" not in h.describe.inject:
            fails.append("the plugin registers without injecting tools")
        e = h.execution("plugkit_none")
        try:
            h.client.ExecuteTool(pb.ExecuteToolRequest(handler_id="no-such-handler", execution=e), timeout=_TIMEOUT)
            fails.append("ExecuteTool of an unknown handler id succeeded")
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.NOT_FOUND:
                fails.append("ExecuteTool of an unknown handler id: %s, want NOT_FOUND" % err.code())
        for name in ["plugkit_other"] + h.tools():
            try:
                h.pre_execute(h.execution(name))
                h.guard(h.execution(name))
            except (_Failed, grpc.RpcError) as err:
                fails.append("a call of %s: %s" % (name, err))
        first = len(h.registrations)
        try:
            h.apply(config)
            if len(h.registrations) != first:
                fails.append("a second Apply registered %d things, the first %d" % (len(h.registrations), first))
        except ApplyError as err:
            fails.append("a second Apply: %s" % err)
        h.shutdown()
        for name in h.tools()[:1]:
            try:
                h.execute(h.execution(name))
                fails.append("a call after Shutdown succeeded")
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE:
                    fails.append("a call after Shutdown: %s, want UNAVAILABLE" % err.code())
    return fails
