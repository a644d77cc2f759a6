"""The plugin process: go-plugin's handshake, its services, the connection
back to the host, logging to the host, and exiting with the host.

shared/README.md in the plugkit repository describes each step; this
module is that description in code.
"""

import concurrent.futures
import ctypes
import datetime
import json
import logging
import os
import secrets
import signal
import socket
import sys
import tempfile
import threading

import grpc

from ._cert import Certificate
from ._plugin import PROTOCOL_VERSION, PROTOCOL_VERSIONS, PluginServer
from .proto import grpc_broker_pb2_grpc, grpc_controller_pb2, grpc_controller_pb2_grpc
from .proto import grpc_stdio_pb2_grpc, health_pb2, health_pb2_grpc
from .proto import plugkit_pb2_grpc as pb_grpc

MAGIC_COOKIE_KEY = "PLUGKIT_PLUGIN"
MAGIC_COOKIE_VALUE = "5f0c2a9e4b7d41c8a3e6d1b9f27c8e04"
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20

# How long Apply waits for the host to say where its callback service
# listens (go-plugin's broker waits as long).
_BROKER_WAIT = 5.0
# How often the parent watch looks at the parent pid.
_PARENT_POLL = 0.2


class _JSONLogHandler(logging.Handler):
    """hclog's JSON line format on stderr, which the host relays under the
    plugin's name at the line's level."""

    _levels = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error", logging.CRITICAL: "error"}

    def emit(self, record):
        try:
            line = {
                "@timestamp": datetime.datetime.now().astimezone().isoformat(timespec="microseconds"),
                "@level": self._levels.get(record.levelno, "info"),
                "@message": record.getMessage(),
                "@module": record.name,
            }
            if record.exc_info:
                line["error"] = logging.Formatter().formatException(record.exc_info)
            sys.stderr.write(json.dumps(line) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


class _HostLink:
    """The plugin's one connection to the host's callback service.

    The host serves it on a go-plugin broker id it passes in Apply, and says
    where on the broker stream (StartStream), which it opens as soon as it
    has connected: a ConnInfo {service_id, network, address} per id. The
    plugin dials that address with the same mutual TLS as the host's
    connection to the plugin, and keeps the connection.
    """

    def __init__(self, cert, host_cert_pem, max_bytes):
        self._cert, self._host_cert, self._max = cert, host_cert_pem, max_bytes
        self._cond = threading.Condition()
        self._offers = {}
        self._id = None
        self._channel = None
        self._stub = None

    def offer(self, info):
        with self._cond:
            self._offers[info.service_id] = info
            self._cond.notify_all()

    def connect(self, broker_id):
        with self._cond:
            if self._id == broker_id and self._channel is not None:
                return
            if not self._cond.wait_for(lambda: broker_id in self._offers, _BROKER_WAIT):
                raise TimeoutError("the host did not say where broker id %d listens within %gs" % (broker_id, _BROKER_WAIT))
            info = self._offers[broker_id]
            target = "unix:" + info.address if info.network == "unix" else info.address
            options = [("grpc.max_receive_message_length", self._max), ("grpc.max_send_message_length", self._max)]
            if self._cert is not None:
                creds = grpc.ssl_channel_credentials(
                    root_certificates=self._host_cert, private_key=self._cert.key_pem, certificate_chain=self._cert.cert_pem
                )
                options.append(("grpc.ssl_target_name_override", "localhost"))
                channel = grpc.secure_channel(target, creds, options=options)
            else:
                channel = grpc.insecure_channel(target, options=options)
            if self._channel is not None:
                self._channel.close()
            self._id, self._channel, self._stub = broker_id, channel, pb_grpc.HostStub(channel)

    def stub(self):
        with self._cond:
            return self._stub

    def close(self):
        with self._cond:
            if self._channel is not None:
                self._channel.close()
            self._channel = self._stub = None


class _Broker(grpc_broker_pb2_grpc.GRPCBrokerServicer):
    def __init__(self, link, done):
        self._link, self._done = link, done

    def StartStream(self, request_iterator, context):
        # The plugin offers nothing on the broker: it only reads the host's
        # offers, on a thread of its own so that this stream can stay open
        # without ever sending.
        def read():
            try:
                for info in request_iterator:
                    self._link.offer(info)
            except grpc.RpcError:
                pass

        threading.Thread(target=read, name="plugkit-broker", daemon=True).start()
        while not self._done.wait(1.0) and context.is_active():
            pass
        return
        yield  # a generator: the stream's responses (none)


class _Controller(grpc_controller_pb2_grpc.GRPCControllerServicer):
    def __init__(self, done):
        self._done = done

    def Shutdown(self, request, context):
        self._done.set()
        return grpc_controller_pb2.Empty()


class _Stdio(grpc_stdio_pb2_grpc.GRPCStdioServicer):
    """go-plugin copies a Go plugin's stdout and stderr over this stream; this
    SDK sends its output to stderr directly, so the stream stays empty (the
    host would otherwise warn that it is missing)."""

    def __init__(self, done):
        self._done = done

    def StreamStdio(self, request, context):
        while not self._done.wait(1.0) and context.is_active():
            pass
        return
        yield


class _Health(health_pb2_grpc.HealthServicer):
    def Check(self, request, context):
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


def _exit_with_parent(done, log):
    """Ends the process when the host dies, even by SIGKILL (go-plugin does not)."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        # The parent-death signal also fires when only the host thread that
        # started the plugin ends: SIGUSR2 (not a deadly signal) lets the
        # handler check that the parent really changed.
        def on_signal(*_):
            if os.getppid() != parent:
                done.set()

        signal.signal(signal.SIGUSR2, on_signal)
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGUSR2), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass

    def watch():
        while not done.wait(_PARENT_POLL):
            if os.getppid() != parent:
                log.warning("host process went away; exiting")
                done.set()

    threading.Thread(target=watch, name="plugkit-parent", daemon=True).start()


def _take_lanes(plugin_server, log):
    """Serves the call lane the host passed (PLUGKIT_CALL_LANES="3,4") and
    calls the host back on the callback lane. Neither is inherited by
    processes the plugin starts."""
    lanes = os.environ.pop("PLUGKIT_CALL_LANES", "")
    if not lanes:
        return
    try:
        calls_fd, callbacks_fd = (int(fd) for fd in lanes.split(","))
    except ValueError:
        log.warning("PLUGKIT_CALL_LANES=%r is not two file descriptors; calls come over gRPC", lanes)
        return
    socks = [socket.socket(fileno=fd) for fd in (calls_fd, callbacks_fd)]
    for sock in socks:
        sock.set_inheritable(False)
    plugin_server.serve_lanes(*socks)


def serve(plugin):
    """Serves plugin as a plugkit plugin process; returns only by ending the process."""
    if os.environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        sys.stderr.write("This is a plugkit plugin: the plugkit host starts it (see its deployment file).\n")
        sys.exit(1)
    offered = os.environ.get("PLUGIN_PROTOCOL_VERSIONS", str(PROTOCOL_VERSION)).split(",")
    common = [v for v in PROTOCOL_VERSIONS if str(v) in (o.strip() for o in offered)]
    if not common:
        sys.stderr.write(
            "plugin speaks plugkit protocol %s; the host accepts %s\n"
            % (",".join(map(str, PROTOCOL_VERSIONS)), ",".join(offered))
        )
        sys.exit(1)
    version = common[-1]  # the newest both speak, as go-plugin picks it

    root = logging.getLogger()
    root.handlers[:] = [_JSONLogHandler()]
    root.setLevel(logging.DEBUG)
    log = logging.getLogger("plugkit")

    max_bytes = int(os.environ.get("PLUGKIT_MAX_MESSAGE_BYTES") or DEFAULT_MAX_MESSAGE_BYTES)
    host_cert = os.environ.get("PLUGIN_CLIENT_CERT", "").encode() or None
    cert = Certificate() if host_cert else None
    done = threading.Event()
    link = _HostLink(cert, host_cert, max_bytes)
    plugin_server = PluginServer(plugin, link, max_bytes, log, version)
    _take_lanes(plugin_server, log)

    # Long-lived streams (broker, stdio, results) hold a worker each.
    server = grpc.server(
        concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="plugkit"),
        options=[("grpc.max_receive_message_length", max_bytes), ("grpc.max_send_message_length", max_bytes)],
    )
    pb_grpc.add_PluginServicer_to_server(plugin_server, server)
    grpc_broker_pb2_grpc.add_GRPCBrokerServicer_to_server(_Broker(link, done), server)
    grpc_controller_pb2_grpc.add_GRPCControllerServicer_to_server(_Controller(done), server)
    grpc_stdio_pb2_grpc.add_GRPCStdioServicer_to_server(_Stdio(done), server)
    health_pb2_grpc.add_HealthServicer_to_server(_Health(), server)

    folder = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or tempfile.gettempdir()
    # Short, as go-plugin's own names are: a socket path is at most 107 bytes.
    path = os.path.join(folder, "plugin%d" % secrets.randbelow(10**10))
    if cert is not None:
        creds = grpc.ssl_server_credentials([(cert.key_pem, cert.cert_pem)], root_certificates=host_cert, require_client_auth=True)
        server.add_secure_port("unix:" + path, creds)
    else:
        server.add_insecure_port("unix:" + path)
    server.start()
    group = os.environ.get("PLUGIN_UNIX_SOCKET_GROUP")
    if group:
        # A host running as another user reaches the socket through this group.
        import grp

        os.chown(path, -1, int(group) if group.isdigit() else grp.getgrnam(group).gr_gid)
        os.chmod(path, 0o660)

    # The handshake: one line on stdout, then stdout is never written again
    # (what the plugin prints goes to stderr, which the host relays).
    line = "1|%d|unix|%s|grpc|%s\n" % (version, path, cert.handshake_field() if cert else "")
    os.write(1, line.encode())
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    # SIGTERM does not end the process: the host stops its plugins itself,
    # in order, and a SIGTERM to its whole process group (systemd's default
    # KillMode, timeout(1)) must not end them under it. A handler, not
    # SIG_IGN, which processes the plugin starts would inherit.
    signal.signal(signal.SIGTERM, lambda *_: log.debug("SIGTERM: not exiting; the host stops its plugins itself"))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the host's terminal's ^C is the host's to handle
    _exit_with_parent(done, log)
    while not done.wait(1.0):
        pass
    server.stop(1.0).wait(2.0)
    link.close()
    try:
        os.unlink(path)
    except OSError:
        pass
    sys.stderr.flush()
    os._exit(0)
