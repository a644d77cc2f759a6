"""Tests of the python-example plugin with plugkit.testing: no host."""

import unittest

from plugin import PLUGIN
from plugkit import testing


class WordCountTest(unittest.TestCase):
    def test_counts_and_guards(self):
        with testing.start(PLUGIN, config={"max_words": 5, "banned": ["Secret"]}) as p:
            self.assertEqual(p.tools(), ["word_count"])
            r = p.call("word_count", {"text": "the quick brown the fox"})
            self.assertEqual(r, testing.Result(ok=True, value={"words": 5, "distinct": 4}))
            r = p.call("word_count", {"text": "a secret memo"})
            self.assertEqual((r.code, r.message), ("DENIED", "banned words: secret"))
            r = p.call("word_count", {"text": "one two three four five six"})
            self.assertEqual((r.code, r.message), ("DENIED", "text has 6 words, over the limit of 5"))

    def test_conformance(self):
        self.assertEqual(testing.conformance(PLUGIN, config={"banned": []}), [])


if __name__ == "__main__":
    unittest.main()
