"""Plugin.Calls: the stage handlers' calls as frames on one stream.

The host sends a frame per call (id, method, request, deadline) and a
cancel frame when it gives up on one; each call runs on the server's
worker threads through the same handler as its RPC, with a context that
stands in for gRPC's, and its answer frame goes back when it is ready, in
any order. The same frames come on the call lane, a socket pair the host
passed (serve_lane), and the plugin's calls back go as frames on the
callback lane (LaneClient). shared/README.md ("The call stream", "The
call lanes") is the protocol.
"""

import heapq
import queue
import struct
import threading
import time

import grpc

from .proto import plugkit_pb2 as pb

# Room a frame needs around what it carries (wire.CallFrameOverhead).
CALL_FRAME_OVERHEAD = 1 << 10

# The methods the stream carries, and their request messages.
_REQUESTS = {
    "ExecuteTool": pb.ExecuteToolRequest,
    "PreExecute": pb.PreExecuteRequest,
    "Guard": pb.GuardRequest,
    "WrapExecute": pb.WrapExecuteRequest,
    "PostExecute": pb.PostExecuteRequest,
    "Approve": pb.ApproveRequest,
    "CallService": pb.CallServiceRequest,
}


class _Aborted(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


class _Deadlines:
    """Ends each call's context at its deadline: one thread for all calls."""

    def __init__(self):
        self._cond = threading.Condition()
        self._heap = []
        self._seq = 0
        self._thread = None

    def add(self, when, fctx):
        with self._cond:
            self._seq += 1
            heapq.heappush(self._heap, (when, self._seq, fctx))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="plugkit-deadlines", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self):
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                when, _, fctx = self._heap[0]
                left = when - time.time()
                if left > 0:
                    self._cond.wait(left)
                    continue
                heapq.heappop(self._heap)
            fctx.end()


_deadlines = _Deadlines()


class _FrameContext:
    """What a handler uses of grpc.ServicerContext, for a call on the stream."""

    def __init__(self, deadline):
        self._deadline = deadline  # time.time() seconds, or None
        self._lock = threading.Lock()
        self._callbacks = []
        self._ended = False
        if deadline is not None:
            _deadlines.add(deadline, self)

    def add_callback(self, callback):
        with self._lock:
            if self._ended:
                return False
            self._callbacks.append(callback)
            return True

    def time_remaining(self):
        return None if self._deadline is None else max(0.0, self._deadline - time.time())

    def is_active(self):
        return not self._ended

    def abort(self, code, details):
        raise _Aborted(code, details)

    def end(self):
        """The call is over (answered, cancelled or past its deadline)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            try:
                cb()
            except Exception:
                pass


def _status_code(code):
    return code.value[0] if isinstance(code, grpc.StatusCode) else int(code)


def serve_calls(server, request_iterator, context, executor, log):
    """The Calls handler of PluginServer: yields answer frames."""
    answers = queue.Queue()
    running = {}
    lock = threading.Lock()

    def run(frame, fctx):
        ans = pb.CallFrame(id=frame.id)
        try:
            request = _REQUESTS[frame.method].FromString(frame.request)
            response = getattr(server, frame.method)(request, fctx).SerializeToString()
            if len(response) + CALL_FRAME_OVERHEAD > server.max_bytes:
                # Too large for a frame: the call fails, not the stream.
                ans.code = _status_code(grpc.StatusCode.RESOURCE_EXHAUSTED)
                ans.message = "answer to %s is %d bytes, over the %d-byte message limit" % (frame.method, len(response), server.max_bytes)
            else:
                ans.response = response
        except _Aborted as e:
            ans.code, ans.message = _status_code(e.code), e.message
        except KeyError:
            ans.code, ans.message = _status_code(grpc.StatusCode.UNIMPLEMENTED), "no method %r on the call stream" % frame.method
        except Exception as e:  # the handlers contain their own; this is the SDK's
            log.error("call stream: %s failed: %s", frame.method, e)
            ans.code, ans.message = _status_code(grpc.StatusCode.INTERNAL), str(e)
        finally:
            with lock:
                running.pop(frame.id, None)
            fctx.end()
        answers.put(ans)

    def read():
        try:
            for frame in request_iterator:
                if frame.cancel:
                    with lock:
                        fctx = running.get(frame.id)
                    if fctx is not None:
                        fctx.end()
                    continue
                deadline = frame.deadline_unix_nano / 1e9 if frame.deadline_unix_nano else None
                fctx = _FrameContext(deadline)
                with lock:
                    running[frame.id] = fctx
                executor.submit(run, frame, fctx)
        except (grpc.RpcError, OSError, ValueError) as e:
            # The stream or lane ended (the host closed it, or went away).
            log.debug("call stream ended: %s", e)
        finally:
            with lock:
                left = list(running.values())
            for fctx in left:
                fctx.end()
            answers.put(None)

    threading.Thread(target=read, name="plugkit-calls", daemon=True).start()
    while True:
        ans = answers.get()
        if ans is None or not context.is_active():
            return
        yield ans


class _LaneContext:
    """The call lane's stand-in for the stream's grpc context."""

    def is_active(self):
        return True


def lane_frames(sock, max_bytes):
    """The frames that come on a call lane: each a 4-byte big-endian length
    and the serialized CallFrame. A frame over the limit ends the lane."""
    limit = max_bytes + CALL_FRAME_OVERHEAD
    with sock.makefile("rb") as f:
        while True:
            head = f.read(4)
            if len(head) < 4:
                return
            (n,) = struct.unpack(">I", head)
            if n > limit:
                raise ValueError("frame of %d bytes is over the lane's %d-byte limit" % (n, limit))
            body = f.read(n)
            if len(body) < n:
                return
            yield pb.CallFrame.FromString(body)


def serve_lane(server, sock, executor, log):
    """Serves the host's calls on the call lane sock until it ends."""
    try:
        for ans in serve_calls(server, lane_frames(sock, server.max_bytes), _LaneContext(), executor, log):
            data = ans.SerializeToString()
            sock.sendall(struct.pack(">I", len(data)) + data)
    except OSError as e:
        log.debug("call lane ended: %s", e)
    finally:
        sock.close()


class LaneClient:
    """Calls the host back on the callback lane (Next, ExecuteTool,
    CallService): a frame per call, the host's answer matched by id. A call
    the lane cannot carry (too large, the lane ended) returns None, and the
    caller uses the RPC instead."""

    _GRACE = 1.0  # past a call's deadline, the host's answer is awaited this long

    def __init__(self, sock, max_bytes, log):
        self._sock, self._max, self._log = sock, max_bytes, log
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._pending = {}
        self._next_id = 0
        self._ended = False
        threading.Thread(target=self._read, name="plugkit-callbacks", daemon=True).start()

    def call(self, method, request, response_type, timeout, context):
        """The host's response to one call, or None to use the RPC. Raises
        _Aborted with the host's status when the call fails."""
        raw = request.SerializeToString()
        if len(raw) + CALL_FRAME_OVERHEAD > self._max:
            return None
        answer = queue.Queue(1)
        with self._lock:
            if self._ended:
                return None
            self._next_id += 1
            cid = self._next_id
            self._pending[cid] = answer
        frame = pb.CallFrame(id=cid, method=method, request=raw)
        if timeout is not None:
            frame.deadline_unix_nano = int((time.time() + timeout) * 1e9)
        if context is not None and not context.add_callback(lambda: self._cancel(cid, answer)):
            self._forget(cid)
            raise _Aborted(grpc.StatusCode.CANCELLED, "the call was cancelled")
        try:
            self._send(frame)
        except OSError as e:
            self._forget(cid)
            raise _Aborted(grpc.StatusCode.UNAVAILABLE, "callback lane closed: %s" % e) from None
        try:
            ans = answer.get(timeout=None if timeout is None else timeout + self._GRACE)
        except queue.Empty:
            self._cancel(cid, None)
            raise _Aborted(grpc.StatusCode.DEADLINE_EXCEEDED, "no answer from the host in time") from None
        if ans.code:
            raise _Aborted(ans.code, ans.message)
        return response_type.FromString(ans.response)

    def _send(self, frame):
        data = frame.SerializeToString()
        with self._send_lock:
            self._sock.sendall(struct.pack(">I", len(data)) + data)

    def _forget(self, cid):
        with self._lock:
            return self._pending.pop(cid, None)

    def _cancel(self, cid, answer):
        """The call's context ended: tell the host, and end the wait."""
        if self._forget(cid) is None:
            return  # answered already
        try:
            self._send(pb.CallFrame(id=cid, cancel=True))
        except OSError:
            pass
        if answer is not None:
            answer.put(pb.CallFrame(id=cid, code=_status_code(grpc.StatusCode.CANCELLED), message="the call was cancelled"))

    def _read(self):
        try:
            for frame in lane_frames(self._sock, self._max):
                answer = self._forget(frame.id)
                if answer is not None:
                    answer.put(frame)
        except (OSError, ValueError) as e:
            self._log.debug("callback lane ended: %s", e)
        with self._lock:
            self._ended = True
            left, self._pending = self._pending, {}
        for cid, answer in left.items():
            answer.put(pb.CallFrame(id=cid, code=_status_code(grpc.StatusCode.UNAVAILABLE), message="callback lane closed"))
