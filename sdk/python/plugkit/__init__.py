"""plugkit: write a plugkit plugin in Python.

A plugin is a program the plugkit host starts; it registers tools and
listeners, and the host sends every call of every tool through its
permission pipeline. With this package a plugin is a few lines::

    from plugkit import Plugin, Tool, serve

    def apply(p, config):
        p.register_tool(Tool(
            name="greet", description="Greets someone by name.",
            parameters={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            execute=lambda call: "hello, " + call.arguments["name"]))
        p.add_guard(lambda call: "not the admin" if call.arguments.get("name") == "admin" else None)

    serve(Plugin(name="greeter", inject=["tools"], apply=apply))

and a deployment file starts it like any other plugin (the file must be
executable, with a ``#!/usr/bin/env python3`` line)::

    plugin "greeter" {
      path = "plugins/greeter/plugin.py"
      sandbox {
        read = ["plugins/greeter", "sdk/python"]
      }
    }

Install the package (``pip install ./sdk/python``; see
docs/writing-a-python-plugin.md) and name that Python in the plugin's
``#!`` line, or keep a ``plugkit`` link to this folder beside the plugin,
as the plugins in this repository do. A sandboxed plugin reads only what
its sandbox grants (and /usr, where Python lives): the plugin's own folder
and the SDK (the virtual environment, or sdk/python) must be in ``read``,
as above, or the process exits at start with ``ModuleNotFoundError: No
module named 'plugkit'``. ``python3 -m plugkit.new NAME`` makes a new
plugin, and ``plugkit.testing`` tests one without a host.

What the handlers receive and answer:

- a tool's ``execute(call)`` returns any JSON value; an exception fails the
  call with TOOL_ERROR and the exception's message;
- a guard ``check(call)`` returns a reason to deny, or None to pass;
- a stage-1 filter returns ``PASS``, ``allow()``, ``deny(reason)`` or
  ``ask(question)``; a wrapper ``wrap(call, next)`` may call ``next()`` to
  hear what the rest of the chain decides;
- a stage-3 filter returns an ``Outcome`` or None; a wrapper returns
  ``next()`` or an ``Outcome`` of its own;
- a stage-4 filter ``(call, outcome)`` returns ``PASS_REVIEW``, ``accept()``,
  ``replace(value)`` or ``block(feedback)``;
- an observer ``(call, result)`` returns nothing; results arrive in order;
- an approver ``(call, question)`` returns ``approve()``, ``reject(reason)``
  or a bool.

Every handler runs on a thread of its own; an exception in one costs that
call only (the host fails it closed: deny, TOOL_ERROR, BLOCKED). A handler
that waits should use ``call.sleep()`` or ``call.cancelled``, so a call the
host cancels ends promptly. ``config`` is a dataclass: the plugin's
configuration is decoded into it strictly (an unknown or missing field is
an error naming it) and its JSON Schema is what ``host validate`` checks
the deployment's config block against.

The process exits when the host asks it to, or when the host dies.
Depends on grpcio, protobuf and cryptography (Debian 12: python3-grpcio,
python3-protobuf, python3-cryptography).
"""

from ._config import ConfigError
from ._plugin import SDK_VERSION, Context, Handle, HostError, Plugin
from ._process import serve
from ._values import (
    PASS,
    PASS_REVIEW,
    Approval,
    Call,
    Cancelled,
    Decision,
    Outcome,
    Principal,
    Review,
    Tool,
    ToolError,
    ToolInfo,
    ToolResult,
    accept,
    allow,
    approve,
    ask,
    block,
    deny,
    reject,
    replace,
)

__all__ = [
    "PASS",
    "PASS_REVIEW",
    "SDK_VERSION",
    "Approval",
    "Call",
    "Cancelled",
    "ConfigError",
    "Context",
    "Decision",
    "Handle",
    "HostError",
    "Outcome",
    "Plugin",
    "Principal",
    "Review",
    "Tool",
    "ToolError",
    "ToolInfo",
    "ToolResult",
    "accept",
    "allow",
    "approve",
    "ask",
    "block",
    "deny",
    "reject",
    "replace",
    "serve",
]
