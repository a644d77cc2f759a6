"""The call stream's stand-in for gRPC's context: deadlines and cancels."""

import threading
import time
import unittest

from plugkit._calls import _FrameContext


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
