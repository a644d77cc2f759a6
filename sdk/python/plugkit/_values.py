"""The values a plugin's handlers see and return, and their wire forms."""

import json
import threading
import typing

from .proto import plugkit_pb2 as pb


class Cancelled(Exception):
    """The call ended (the host cancelled it, or its deadline passed) before the handler did."""


class Principal(typing.NamedTuple):
    """Who a call is made for: kind is user, agent, service or local."""

    id: str
    kind: str
    attributes: typing.Tuple[str, ...] = ()

    def matches(self, selector):
        """Whether the principal is named by selector: "*", "KIND:ID" or one of its attributes."""
        return selector == "*" or selector == "%s:%s" % (self.kind, self.id) or selector in self.attributes


class ToolInfo(typing.NamedTuple):
    """What the host knows about the tool a call is for."""

    name: str
    description: str
    parameters: dict
    destructive: bool
    read_only: bool
    idempotent: bool
    timeout: float  # seconds; 0 means none
    owner: str


class ToolError(typing.NamedTuple):
    """The failure half of a result: code is UNKNOWN_TOOL, INVALID_ARGUMENTS, DENIED,
    BLOCKED, TOOL_ERROR, TOOL_TIMEOUT or ABORTED."""

    code: str
    message: str


class Call:
    """One call, as every stage sees it; no stage can change it.

    arguments is the decoded JSON the host validated against the tool's
    parameters; arguments_json the exact bytes it recorded. A handler that
    waits should use sleep() or watch cancelled, so that a call the host
    cancels or times out ends promptly.
    """

    def __init__(self, execution, ctx=None):
        self.id = execution.id
        self.name = execution.name
        self.caller = execution.caller
        self.arguments_json = bytes(execution.arguments_json)
        self.tool = _tool_info(execution.tool) if execution.HasField("tool") else None
        p = execution.principal
        self.principal = Principal(p.id, p.kind, tuple(p.attributes)) if execution.HasField("principal") else None
        #: The host explains the call rather than makes it (host explain,
        #: host test): answer what you would decide and act on nothing. Only
        #: a plugin declared with dry_run=True is sent such a call.
        self.dry_run = execution.dry_run
        #: Set when the call ends before its handler returns.
        self.cancelled = threading.Event()
        self._ctx = ctx
        # A context that ended already (the host's cancel came while the
        # call waited for a worker thread) takes no callback: the call
        # starts cancelled rather than missing the cancel.
        if ctx is not None and not ctx.add_callback(self.cancelled.set):
            self.cancelled.set()
        self._arguments = None

    @property
    def arguments(self):
        if self._arguments is None:
            self._arguments = json.loads(self.arguments_json or b"{}")
        return self._arguments

    def time_remaining(self):
        """Seconds left before the call's deadline, or None when it has none."""
        return self._ctx.time_remaining() if self._ctx is not None else None

    def sleep(self, seconds):
        """Waits seconds; raises Cancelled if the call ends first."""
        if self.cancelled.wait(max(0.0, seconds)):
            raise Cancelled("call %s ended" % self.id)

    def __repr__(self):
        return "Call(id=%r, name=%r, caller=%r)" % (self.id, self.name, self.caller)


def _tool_info(t):
    return ToolInfo(
        name=t.name,
        description=t.description,
        parameters=json.loads(t.parameters_json) if t.parameters_json else {"type": "object"},
        destructive=t.destructive,
        read_only=t.read_only,
        idempotent=t.idempotent,
        timeout=t.timeout_ms / 1000.0,
        owner=t.owner,
    )


class Tool(typing.NamedTuple):
    """A tool: execute(call) returns its result (anything json.dumps accepts);
    an exception it raises fails the call with TOOL_ERROR and its message.
    parameters is a JSON Schema (dict or JSON text) the host checks the
    arguments against before any stage runs; timeout is in seconds."""

    name: str
    description: str
    execute: typing.Callable
    parameters: typing.Any = None
    destructive: bool = False
    read_only: bool = False
    idempotent: bool = False
    timeout: float = 0

    def descriptor(self):
        params = self.parameters
        if params is None:
            raw = b""
        elif isinstance(params, (str, bytes)):
            raw = params.encode() if isinstance(params, str) else params
            json.loads(raw)  # fail here, not in the host, on a typo
        else:
            raw = json.dumps(params).encode()
        return pb.ToolDescriptor(
            name=self.name,
            description=self.description,
            parameters_json=raw,
            destructive=self.destructive,
            read_only=self.read_only,
            idempotent=self.idempotent,
            timeout_ms=int(round(self.timeout * 1000)),
        )


# Stage-1 decisions.


class Decision(typing.NamedTuple):
    """A stage-1 answer; make one with allow(), deny(), ask() or use PASS."""

    verdict: int
    reason: str = ""
    #: The rule that decided, when the listener has named rules (optional;
    #: host explain and host test show it).
    rule: str = ""
    #: For an ask: the deployment's approval route it goes to ("caller" for
    #: the calling client); empty leaves it to the host.
    route: str = ""

    def to_proto(self):
        return pb.Decision(verdict=self.verdict, reason=self.reason, rule=self.rule, route=self.route)

    @staticmethod
    def from_proto(d):
        return Decision(d.verdict, d.reason, d.rule, d.route)


#: No opinion: the rest of the chain decides.
PASS = Decision(pb.VERDICT_PASS)


def allow():
    """Lets the call through stage 1 (stage 2's guards still run)."""
    return Decision(pb.VERDICT_ALLOW)


def deny(reason, rule=""):
    """Denies the call: DENIED with reason; rule names the rule that did."""
    return Decision(pb.VERDICT_DENY, reason, rule)


def ask(question, rule="", route=""):
    """Puts question to the approver; only an approval lets the call through.

    route names the deployment's approval route the question goes to
    ("caller" for the calling client); empty leaves it to the host.
    """
    return Decision(pb.VERDICT_ASK, question, rule, route)


# Stage-3 outcomes.


class Outcome(typing.NamedTuple):
    """What stage 3 produced: a value, or an error (TOOL_ERROR, TOOL_TIMEOUT, ABORTED)."""

    ok: bool
    value: typing.Any = None
    error: typing.Optional[ToolError] = None

    @staticmethod
    def success(value):
        return Outcome(True, value)

    @staticmethod
    def failure(code, message):
        return Outcome(False, None, ToolError(code, message))

    def to_proto(self):
        out = pb.Outcome(ok=self.ok)
        if self.value is not None:
            out.value_json = json.dumps(self.value).encode()
        if self.error is not None:
            out.error.code, out.error.message = self.error.code, self.error.message
        return out

    @staticmethod
    def from_proto(o):
        err = ToolError(o.error.code, o.error.message) if o.HasField("error") else None
        return Outcome(o.ok, json.loads(o.value_json) if o.value_json else None, err)


# Stage-4 reviews.


class Review(typing.NamedTuple):
    """A stage-4 answer; make one with accept(), replace(), block() or use PASS_REVIEW."""

    verdict: int
    value: typing.Any = None
    feedback: str = ""

    def to_proto(self):
        out = pb.Review(verdict=self.verdict, feedback=self.feedback)
        if self.verdict == pb.REVIEW_VERDICT_REPLACE:
            out.value_json = json.dumps(self.value).encode()
        return out

    @staticmethod
    def from_proto(r):
        return Review(r.verdict, json.loads(r.value_json) if r.value_json else None, r.feedback)


#: No opinion: the rest of the chain reviews.
PASS_REVIEW = Review(pb.REVIEW_VERDICT_PASS)


def accept():
    """Accepts the result as it is."""
    return Review(pb.REVIEW_VERDICT_ACCEPT)


def replace(value):
    """Accepts the result with value in place of its value."""
    return Review(pb.REVIEW_VERDICT_REPLACE, value)


def block(feedback):
    """Refuses the result: BLOCKED with feedback."""
    return Review(pb.REVIEW_VERDICT_BLOCK, None, feedback)


# Approvals.


class Approval(typing.NamedTuple):
    approved: bool
    reason: str = ""


def approve():
    return Approval(True)


def reject(reason):
    return Approval(False, reason)


class ToolResult(typing.NamedTuple):
    """What a call through the whole pipeline returned."""

    id: str
    ok: bool
    value: typing.Any
    error: typing.Optional[ToolError]
    decided_by: str
    duration: float  # seconds; set on results observers receive

    @staticmethod
    def from_proto(r):
        err = ToolError(r.error.code, r.error.message) if r.HasField("error") else None
        value = json.loads(r.value_json) if r.value_json else None
        return ToolResult(r.id, r.ok, value, err, r.decided_by, r.duration_ns / 1e9)
