"""The call stream's stand-in for gRPC's context (deadlines and cancels),
and the call lane's framing."""

import socket
import struct
import threading
import time
import unittest

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
