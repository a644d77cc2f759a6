"""The plugin's side of the plugkit protocol: the Plugin service the host
calls, and the Context through which the plugin registers with the host.

Kept in one module (about 500 lines): each Plugin RPC looks up what the
Context registered, and the two share the handler tables and their lock;
split, each half would reach into the other's state."""

import concurrent.futures
import json
import logging
import threading
import traceback
import typing

import grpc

from . import _calls, _config
from ._values import (
    PASS,
    PASS_REVIEW,
    Approval,
    Call,
    Decision,
    Outcome,
    Review,
    ToolResult,
)
from .proto import plugkit_pb2 as pb
from .proto import plugkit_pb2_grpc as pb_grpc

#: The plugkit protocol versions this SDK speaks, oldest first: 2 has calls
#: as frames (the call stream, the call lanes), which a host of version 1
#: does not know. The host and the plugin use the newest both speak.
PROTOCOL_VERSIONS = (1, 2)
#: The newest of them.
PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]
SDK_VERSION = "python-0.1.0"


class Plugin(typing.NamedTuple):
    """What a plugin is. apply(context, config) registers the plugin's tools and
    listeners through context; config is an instance of the dataclass config
    (or {} when config is None), decoded strictly from the deployment's
    config block. inject names the services the plugin needs ("tools" to
    register tools and listeners); provides the services it will provide.
    stop() runs at a graceful unload. dry_run=True declares that the
    plugin's stage-1 listeners and guards understand dry runs
    (call.dry_run): given one they answer without acting; host explain asks
    no other plugin's listeners."""

    name: str
    apply: typing.Callable
    version: str = ""
    config: typing.Any = None
    inject: typing.Sequence[str] = ()
    provides: typing.Sequence[str] = ()
    stop: typing.Optional[typing.Callable] = None
    dry_run: bool = False


class HostError(Exception):
    """The host refused a request (a registration, a service call) or could not be reached."""


class Handle:
    """One registration; dispose() undoes it. Everything a plugin registered is
    undone anyway when it unloads or its process ends."""

    def __init__(self, ctx, registration_id, handler_id):
        self._ctx, self.id, self._handler = ctx, registration_id, handler_id

    def dispose(self):
        self._ctx._host_call("Dispose", pb.DisposeRequest(registration_id=self.id))
        self._ctx._server.forget(self._handler)


class Context:
    """What a plugin's apply function and handlers use to talk to the host."""

    def __init__(self, server):
        self._server = server
        self.log = logging.getLogger("plugkit." + server.plugin.name)

    # Registrations. Each stores its handler before it asks the host, so a
    # call that arrives before the host's answer already finds it.

    def _register(self, rpc, make_request, handler):
        hid = self._server.remember(handler)
        try:
            resp = self._host_call(rpc, make_request(hid))
        except HostError:
            self._server.forget(hid)
            raise
        return Handle(self, resp.registration_id, hid)

    def register_tool(self, tool):
        """Registers a Tool; the host validates its arguments and runs it through the pipeline."""
        if not (tool.name or "").strip():
            raise ValueError("register tool: name is empty")
        problems = []
        if not (tool.description or "").strip():
            problems.append("description is empty")
        if not callable(tool.execute):
            problems.append("execute is not a function")
        if tool.timeout < 0:
            problems.append("timeout is negative")
        try:
            tool.descriptor()
        except ValueError as e:
            problems.append("parameters are not JSON: %s" % e)
        if problems:
            raise ValueError("register tool %r: %s" % (tool.name, "; ".join(problems)))
        return self._register("RegisterTool", lambda h: pb.RegisterToolRequest(handler_id=h, tool=tool.descriptor()), ("tool", tool.execute))

    def add_guard(self, check, tools=(), name="", shadow=False, enforce_for=()):
        """Stage 2: check(call) returns a reason to deny, or None/"" to pass.
        name is the rule the guard is: audits, host explain and host test
        report it. shadow registers it in shadow mode (a rule marked
        mode = "shadow"): the host asks it on every call but does not apply
        its denial, which it records on the call; it needs a name.
        enforce_for, with shadow, is a canary: the principals these
        selectors name ("group:canary") have the rule enforced."""
        if shadow and not name:
            raise ValueError("a guard in shadow needs a name (the host matches its answers to the rule by it)")
        if enforce_for and not shadow:
            raise ValueError("enforce_for without shadow: a canary is of a rule in shadow")
        return self._register(
            "AddGuard",
            lambda h: pb.AddGuardRequest(handler_id=h, name=name, tools=tools, shadow=shadow, enforce_for=enforce_for),
            ("guard", check, name),
        )

    def _listen(self, stage, kind, filter, wrap, tools, name):
        if (filter is None) == (wrap is None):
            raise ValueError("give exactly one of filter and wrap")
        mode = pb.LISTEN_MODE_FILTER if filter is not None else pb.LISTEN_MODE_WRAP
        fn = filter if filter is not None else wrap
        return self._register(
            "Listen",
            lambda h: pb.ListenRequest(handler_id=h, stage=stage, mode=mode, tools=tools, name=name),
            (kind, fn, mode == pb.LISTEN_MODE_WRAP),
        )

    def on_pre_execute(self, filter=None, wrap=None, tools=(), name=""):
        """Stage 1. filter(call) returns a Decision (PASS: the rest of the chain
        decides); wrap(call, next) may call next() to hear the rest of the chain."""
        return self._listen(pb.STAGE_PRE_EXECUTE, "pre", filter, wrap, tools, name)

    def on_execute(self, filter=None, wrap=None, tools=(), name=""):
        """Stage 3, around the tool. filter(call) returns an Outcome or None (pass);
        wrap(call, next) returns an Outcome, usually from next()."""
        return self._listen(pb.STAGE_EXECUTE, "exec", filter, wrap, tools, name)

    def on_post_execute(self, filter=None, wrap=None, tools=(), name=""):
        """Stage 4. filter(call, outcome) returns a Review (PASS_REVIEW: the rest
        of the chain reviews); wrap(call, outcome, next) may call next()."""
        return self._listen(pb.STAGE_POST_EXECUTE, "post", filter, wrap, tools, name)

    def on_result(self, observe, tools=(), name=""):
        """Stage 5: observe(call, result) sees every final ToolResult, in order."""
        return self._register(
            "Listen",
            lambda h: pb.ListenRequest(handler_id=h, stage=pb.STAGE_RESULT, tools=tools, name=name),
            ("observe", observe),
        )

    def set_approver(self, approve, name=""):
        """approve(call, question) answers an ASK: an Approval, or True/False."""
        return self._register("SetApprover", lambda h: pb.SetApproverRequest(handler_id=h, name=name), ("approve", approve))

    def provide(self, service, methods):
        """Provides service: methods maps a method name to fn(args, caller) -> result."""
        return self._register(
            "Provide",
            lambda h: pb.ProvideRequest(handler_id=h, service=service, methods=sorted(methods)),
            ("service", dict(methods)),
        )

    def contribute(self, point, key, value, order=0):
        resp = self._host_call("Contribute", pb.ContributeRequest(point=point, key=key, order=order, value_json=json.dumps(value).encode()))
        return Handle(self, resp.registration_id, None)

    # Calls into the host.

    def call_service(self, service, method, args=None, call=None):
        """Calls a method of a service the plugin injects; returns its decoded result."""
        req = pb.HostCallServiceRequest(service=service, method=method, args_json=json.dumps(args).encode())
        resp = self._host_call("CallService", req, call)
        if resp.error:
            raise HostError("%s.%s: %s" % (service, method, resp.error))
        return json.loads(resp.result_json) if resp.result_json else None

    def execute_tool(self, name, arguments=None, call=None):
        """Runs a tool through the whole pipeline as this plugin; returns its ToolResult.
        Pass the call being handled as call to bound it by that call's deadline."""
        req = pb.HostExecuteToolRequest(name=name, arguments_json=json.dumps(arguments if arguments is not None else {}).encode())
        return ToolResult.from_proto(self._host_call("ExecuteTool", req, call).result)

    def report_problem(self, problem):
        """Says what keeps the plugin from doing its job ("" when nothing does any more)."""
        self._host_call("ReportProblem", pb.ReportProblemRequest(problem=problem))

    def _host_call(self, rpc, req, call=None):
        return self._server.host_call(rpc, req, call)


def _contain(log, what, fn, *args):
    """Runs a handler; any exception becomes the error string the host receives."""
    try:
        return fn(*args), None
    except Exception as e:  # a faulty handler costs one call, never the process
        log.error("%s failed: %s\n%s", what, e, traceback.format_exc())
        return None, str(e) or type(e).__name__


class _Gate:
    """Counts calls in flight; once closed, new calls are refused."""

    def __init__(self):
        self._cond = threading.Condition()
        self._n = 0
        self._closed = False

    def enter(self):
        with self._cond:
            if self._closed:
                return False
            self._n += 1
            return True

    def leave(self):
        with self._cond:
            self._n -= 1
            self._cond.notify_all()

    def close_and_wait(self, timeout):
        with self._cond:
            self._closed = True
            return self._cond.wait_for(lambda: self._n == 0, timeout)


class PluginServer(pb_grpc.PluginServicer):
    """The Plugin service: the host's calls into the plugin."""

    def __init__(self, plugin, host_link, max_bytes, log, protocol_version=PROTOCOL_VERSION):
        self.plugin = plugin
        self.protocol_version = protocol_version
        self._link = host_link
        self._max = self.max_bytes = max_bytes
        self._log = log
        self._lock = threading.Lock()
        self._handlers = {}
        self._next_id = 0
        self._gate = _Gate()
        self.stopped = threading.Event()
        self.schema = json.dumps(_config.schema(plugin.config)).encode()
        self.context = Context(self)
        # The calls that arrive on the call stream or lane run here.
        self._calls = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="plugkit-call")
        self.call_lanes = False
        self._callbacks = None  # the callback lane's client, when the host passed lanes

    # The handler registry.

    def remember(self, handler):
        with self._lock:
            self._next_id += 1
            hid = "h%d" % self._next_id
            self._handlers[hid] = handler
            return hid

    def forget(self, hid):
        with self._lock:
            self._handlers.pop(hid, None)

    def _handler(self, ctx, hid, kind):
        with self._lock:
            h = self._handlers.get(hid)
        if h is None or h[0] != kind:
            ctx.abort(grpc.StatusCode.NOT_FOUND, "no %s handler %r" % (kind, hid))
        return h

    # The calls back that go on the callback lane when there is one, and
    # their responses.
    _LANE_CALLS = {
        "Next": pb.NextResponse,
        "ExecuteTool": pb.HostExecuteToolResponse,
        "CallService": pb.HostCallServiceResponse,
    }

    def host_call(self, rpc, req, call=None):
        lane = self._callbacks
        if lane is not None and rpc in self._LANE_CALLS:
            timeout = call.time_remaining() if call is not None else None
            ctx = call._ctx if call is not None else None
            try:
                resp = lane.call(rpc, req, self._LANE_CALLS[rpc], timeout, ctx)
            except _calls._Aborted as e:
                raise HostError("%s: %s" % (rpc, e.message)) from None
            if resp is not None:
                return resp
        stub = self._link.stub()
        if stub is None:
            raise HostError("not connected to the host: registrations and host calls work from apply on")
        timeout = call.time_remaining() if call is not None else None
        fut = getattr(stub, rpc).future(req, timeout=timeout)
        if call is not None and call._ctx is not None and not call._ctx.add_callback(fut.cancel):
            fut.cancel()  # the call ended already
        try:
            return fut.result()
        except grpc.FutureCancelledError:
            raise HostError("%s: the call was cancelled" % rpc) from None
        except grpc.RpcError as e:
            raise HostError("%s: %s" % (rpc, e.details() or e.code())) from None

    def _enter(self, ctx):
        if not self._gate.enter():
            ctx.abort(grpc.StatusCode.UNAVAILABLE, "plugin is shutting down")

    def _encode(self, what, value):
        """JSON of a handler's value, or the error the host receives."""
        try:
            raw = json.dumps(value).encode()
        except (TypeError, ValueError) as e:
            return None, "%s: result cannot be encoded as JSON: %s" % (what, e)
        if len(raw) > self._max:
            return None, "%s is %d bytes, over the %d-byte message limit" % (what, len(raw), self._max)
        return raw, None

    def _next(self, token, call):
        return self.host_call("Next", pb.NextRequest(call_token=token), call)

    # The RPCs.

    def Describe(self, request, context):
        p = self.plugin
        return pb.DescribeResponse(
            name=p.name,
            version=p.version,
            sdk_version=SDK_VERSION,
            protocol_version=self.protocol_version,
            config_schema_json=self.schema,
            inject=list(p.inject),
            provides=list(p.provides),
            call_stream=True,
            call_lanes=self.call_lanes,
            dry_run=p.dry_run,
        )

    def Apply(self, request, context):
        try:
            self._link.connect(request.host_broker_id)
        except Exception as e:
            return pb.ApplyResponse(error="connect to the host: %s" % e)
        with self._lock:
            self._handlers.clear()  # the host undid everything before a new Apply
        try:
            cfg = _config.decode(self.plugin.config, request.config_json)
        except _config.ConfigError as e:
            return pb.ApplyResponse(error=str(e))
        _, err = _contain(self._log, "apply", self.plugin.apply, self.context, cfg)
        return pb.ApplyResponse(error=err or "")

    def ExecuteTool(self, request, context):
        _, fn = self._handler(context, request.handler_id, "tool")
        self._enter(context)
        try:
            call = Call(request.execution, context)
            value, err = _contain(self._log, "tool %s" % call.name, fn, call)
            if err:
                return pb.ExecuteToolResponse(error=err)
            raw, err = self._encode('result of tool "%s"' % call.name, value)
            return pb.ExecuteToolResponse(value_json=raw or b"", error=err or "")
        finally:
            self._gate.leave()

    def Guard(self, request, context):
        _, fn, name = self._handler(context, request.handler_id, "guard")
        self._enter(context)
        try:
            reason, err = _contain(self._log, "guard", fn, Call(request.execution, context))
            return pb.GuardResponse(reason=reason or "", error=err or "", rule=name)
        finally:
            self._gate.leave()

    def PreExecute(self, request, context):
        _, fn, wrap = self._handler(context, request.handler_id, "pre")
        self._enter(context)
        try:
            call = Call(request.execution, context)
            if not wrap:
                d, err = _contain(self._log, "pre-execute listener", fn, call)
                return self._decision(d, err)
            heard = []

            def next_():
                d = Decision.from_proto(self._next(request.call_token, call).pre_execute)
                heard.append(d)
                return d

            d, err = _contain(self._log, "pre-execute listener", fn, call, next_)
            if err is None and d == PASS:  # a wrapper answers what the rest said
                d = heard[-1] if heard else next_()
            return self._decision(d, err)
        finally:
            self._gate.leave()

    @staticmethod
    def _decision(d, err):
        if err:
            return pb.PreExecuteResponse(error=err)
        if not isinstance(d, Decision):
            return pb.PreExecuteResponse(error="pre-execute listener answered %r, not a Decision" % (d,))
        return pb.PreExecuteResponse(decision=d.to_proto())

    def WrapExecute(self, request, context):
        _, fn, wrap = self._handler(context, request.handler_id, "exec")
        self._enter(context)
        try:
            call = Call(request.execution, context)
            if not wrap:
                o, err = _contain(self._log, "execute listener", fn, call)
                if err is None and o is None:
                    return pb.WrapExecuteResponse(**{"pass": True})
            else:
                o, err = _contain(self._log, "execute listener", fn, call, lambda: Outcome.from_proto(self._next(request.call_token, call).execute))
            if err:
                return pb.WrapExecuteResponse(error=err)
            if not isinstance(o, Outcome):
                return pb.WrapExecuteResponse(error="execute listener answered %r, not an Outcome" % (o,))
            return pb.WrapExecuteResponse(outcome=o.to_proto())
        finally:
            self._gate.leave()

    def PostExecute(self, request, context):
        _, fn, wrap = self._handler(context, request.handler_id, "post")
        self._enter(context)
        try:
            call = Call(request.execution, context)
            outcome = Outcome.from_proto(request.outcome)
            if not wrap:
                r, err = _contain(self._log, "post-execute listener", fn, call, outcome)
            else:
                heard = []

                def next_():
                    r = Review.from_proto(self._next(request.call_token, call).post_execute)
                    heard.append(r)
                    return r

                r, err = _contain(self._log, "post-execute listener", fn, call, outcome, next_)
                if err is None and r == PASS_REVIEW:
                    r = heard[-1] if heard else next_()
            if err:
                return pb.PostExecuteResponse(error=err)
            if not isinstance(r, Review):
                return pb.PostExecuteResponse(error="post-execute listener answered %r, not a Review" % (r,))
            return pb.PostExecuteResponse(review=r.to_proto())
        finally:
            self._gate.leave()

    def Approve(self, request, context):
        _, fn = self._handler(context, request.handler_id, "approve")
        self._enter(context)
        try:
            a, err = _contain(self._log, "approver", fn, Call(request.execution, context), request.question)
            if err:
                return pb.ApproveResponse(error=err)
            if isinstance(a, bool):
                a = Approval(a)
            if not isinstance(a, Approval):
                return pb.ApproveResponse(error="approver answered %r, not an Approval" % (a,))
            return pb.ApproveResponse(approved=a.approved, reason=a.reason)
        finally:
            self._gate.leave()

    def CallService(self, request, context):
        _, methods = self._handler(context, request.handler_id, "service")
        self._enter(context)
        try:
            fn = methods.get(request.method)
            if fn is None:
                return pb.CallServiceResponse(error="no method %r" % request.method)
            try:
                args = json.loads(request.args_json) if request.args_json else None
            except ValueError as e:
                return pb.CallServiceResponse(error="arguments are not JSON: %s" % e)
            value, err = _contain(self._log, "method %s" % request.method, fn, args, request.caller)
            if err:
                return pb.CallServiceResponse(error=err)
            raw, err = self._encode("result of %s" % request.method, value)
            return pb.CallServiceResponse(result_json=raw or b"", error=err or "")
        finally:
            self._gate.leave()

    def Observe(self, request_iterator, context):
        n = 0
        for msg in request_iterator:
            n += 1
            with self._lock:
                h = self._handlers.get(msg.handler_id)
            if h is None or h[0] != "observe":
                self._log.warning("result for unknown observer %r dropped", msg.handler_id)
                continue
            _contain(self._log, "observer", h[1], Call(msg.execution), ToolResult.from_proto(msg.result))
        return pb.ObserveResponse(received=n)

    def Calls(self, request_iterator, context):
        return _calls.serve_calls(self, request_iterator, context, self._calls, self._log)

    def serve_lanes(self, calls_sock, callbacks_sock):
        """Serves the host's calls on the call lane (Describe says so from
        now on) and calls the host back on the callback lane."""
        self._callbacks = _calls.LaneClient(callbacks_sock, self._max, self._log)
        self.call_lanes = True
        threading.Thread(target=_calls.serve_lane, args=(self, calls_sock, self._calls, self._log), name="plugkit-lane", daemon=True).start()

    def Shutdown(self, request, context):
        remaining = context.time_remaining()
        if not self._gate.close_and_wait(remaining if remaining is not None else 10):
            self._log.warning("shutdown: calls still in flight")
        err = None
        if self.plugin.stop is not None:
            _, err = _contain(self._log, "stop", self.plugin.stop)
        self._link.close()
        self.stopped.set()
        return pb.ShutdownResponse(error=err or "")
