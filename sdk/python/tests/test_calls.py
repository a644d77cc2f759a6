"""The call stream's stand-in for gRPC's context (deadlines and cancels),
and the call lane's framing."""

import logging
import socket
import struct
import threading
import time
import unittest

import grpc

from plugkit import _calls
from plugkit._calls import _FrameContext
from plugkit.proto import plugkit_pb2 as pb


class FrameContextTest(unittest.TestCase):
    def test_deadline_ends_the_call(self):
        ended = threading.Event()
        fctx = _FrameContext(time.time() + 0.05)
        self.assertTrue(fctx.add_callback(ended.set))
        self.assertGreater(fctx.time_remaining(), 0)
        self.assertTrue(ended.wait(5), "the deadline did not end the call")
        self.assertFalse(fctx.is_active())
        self.assertEqual(fctx.time_remaining(), 0.0)

    def test_earlier_deadline_first(self):
        order = []
        late = _FrameContext(time.time() + 0.3)
        early = _FrameContext(time.time() + 0.05)
        done = threading.Event()
        late.add_callback(lambda: (order.append("late"), done.set()))
        early.add_callback(lambda: order.append("early"))
        self.assertTrue(done.wait(5))
        self.assertEqual(order, ["early", "late"])

    def test_cancel_runs_callbacks_once(self):
        calls = []
        fctx = _FrameContext(None)
        self.assertIsNone(fctx.time_remaining())
        fctx.add_callback(lambda: calls.append(1))
        fctx.end()
        fctx.end()
        self.assertEqual(calls, [1])
        self.assertFalse(fctx.add_callback(lambda: calls.append(2)), "a callback added after the end")


if __name__ == "__main__":
    unittest.main()


class CancelBeforeHandlerTest(unittest.TestCase):
    """A cancel that comes while the call waits for a worker thread ends
    its context before the handler builds its Call: the Call must start
    cancelled, not miss the cancel and run its body to the end."""

    def test_call_of_an_ended_context_is_cancelled(self):
        from plugkit import Call, Cancelled

        fctx = _FrameContext(None)
        fctx.end()
        call = Call(pb.Execution(id="c1", name="slow"), fctx)
        self.assertTrue(call.cancelled.is_set(), "the cancel was lost")
        with self.assertRaises(Cancelled):
            call.sleep(30)  # returns at once, raising, or fails by not raising


class LaneFramesTest(unittest.TestCase):
    def _pair(self):
        a, b = socket.socketpair()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        return a, b

    def test_reads_frames_to_the_end(self):
        a, b = self._pair()
        for i in (1, 2):
            data = pb.CallFrame(id=i, method="Guard").SerializeToString()
            a.sendall(struct.pack(">I", len(data)) + data)
        a.close()
        got = [(f.id, f.method) for f in _calls.lane_frames(b, 1 << 20)]
        self.assertEqual(got, [(1, "Guard"), (2, "Guard")])

    def test_frame_over_the_limit_ends_the_lane(self):
        a, b = self._pair()
        a.sendall(struct.pack(">I", 1 << 30))
        with self.assertRaisesRegex(ValueError, "over the lane"):
            next(_calls.lane_frames(b, 1 << 20))


class _Ctx:
    """A call's context: add_callback, and end to run the callbacks."""

    def __init__(self):
        self._callbacks = []

    def add_callback(self, cb):
        self._callbacks.append(cb)
        return True

    def end(self):
        for cb in self._callbacks:
            cb()


class LaneClientTest(unittest.TestCase):
    def setUp(self):
        self.plugin_end, self.host_end = socket.socketpair()
        self.client = _calls.LaneClient(self.plugin_end, 1 << 20, logging.getLogger("test"))
        self.frames = _calls.lane_frames(self.host_end, 1 << 20)
        self.addCleanup(self.host_end.close)
        self.addCleanup(self.frames.close)
        self.addCleanup(self.plugin_end.close)
        # The host's end closes first: the client's reader sees the lane end.
        self.addCleanup(lambda: self.host_end.shutdown(socket.SHUT_RDWR))

    def answer(self, frame):
        data = frame.SerializeToString()
        self.host_end.sendall(struct.pack(">I", len(data)) + data)

    def test_call_is_answered(self):
        def host():
            f = next(self.frames)
            self.assertEqual(f.method, "Next")
            self.assertEqual(pb.NextRequest.FromString(f.request).call_token, "t1")
            self.assertGreater(f.deadline_unix_nano, 0)
            self.answer(pb.CallFrame(id=f.id, response=pb.NextResponse(execute=pb.Outcome(ok=True, value_json=b"5")).SerializeToString()))

        t = threading.Thread(target=host)
        t.start()
        resp = self.client.call("Next", pb.NextRequest(call_token="t1"), pb.NextResponse, 5.0, None)
        t.join()
        self.assertEqual(resp.execute.value_json, b"5")

    def test_host_error_is_raised(self):
        def host():
            f = next(self.frames)
            self.answer(pb.CallFrame(id=f.id, code=5, message="no such token"))

        threading.Thread(target=host).start()
        with self.assertRaises(_calls._Aborted) as e:
            self.client.call("Next", pb.NextRequest(call_token="x"), pb.NextResponse, 5.0, None)
        self.assertEqual(e.exception.message, "no such token")

    def test_cancel_sends_a_cancel_frame(self):
        ctx = _Ctx()
        seen = []

        def host():
            seen.append(next(self.frames))
            ctx.end()  # the plugin's call ends while the host works on it
            seen.append(next(self.frames))

        t = threading.Thread(target=host)
        t.start()
        with self.assertRaises(_calls._Aborted) as e:
            self.client.call("ExecuteTool", pb.HostExecuteToolRequest(name="x"), pb.HostExecuteToolResponse, None, ctx)
        t.join()
        self.assertEqual(e.exception.code, grpc.StatusCode.CANCELLED.value[0])
        self.assertTrue(seen[1].cancel)
        self.assertEqual(seen[1].id, seen[0].id)

    def test_lane_end_fails_calls_then_gives_way(self):
        def host():
            next(self.frames)
            self.host_end.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=host).start()
        with self.assertRaises(_calls._Aborted) as e:
            self.client.call("CallService", pb.HostCallServiceRequest(service="s"), pb.HostCallServiceResponse, 5.0, None)
        self.assertEqual(e.exception.code, grpc.StatusCode.UNAVAILABLE.value[0])
        # Later calls use the RPC.
        self.assertIsNone(self.client.call("CallService", pb.HostCallServiceRequest(service="s"), pb.HostCallServiceResponse, 5.0, None))

    def test_too_large_goes_as_rpc(self):
        big = pb.HostExecuteToolRequest(name="x", arguments_json=b"x" * (1 << 20))
        self.assertIsNone(self.client.call("ExecuteTool", big, pb.HostExecuteToolResponse, 5.0, None))
