"""Tests of the cwmserve client against a real cwm serve, started by the Go
test that runs this file (internal/envserver, TestPythonClient), which
passes its URL, token and task in CWM_SERVE_URL, CWM_SERVE_TOKEN and
CWM_SERVE_TASK."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cwmserve import Client, ServeError  # noqa: E402

URL = os.environ.get("CWM_SERVE_URL", "")
TOKEN = os.environ.get("CWM_SERVE_TOKEN", "")
TASK = os.environ.get("CWM_SERVE_TASK", "")


@unittest.skipUnless(URL, "needs a server (CWM_SERVE_URL)")
class ClientTest(unittest.TestCase):
    def setUp(self):
        self.client = Client(URL, token=TOKEN)

    def test_info(self):
        self.assertEqual(self.client.health()["status"], "healthy")
        self.assertIn("frame", self.client.schema("trace")["action"]["properties"])
        self.assertEqual(self.client.metadata()["name"], "cwm")

    def test_episode_step_clone_close(self):
        with self.client.create(task_id=TASK) as ep:
            self.assertEqual(len(ep.observation["messages"]), 2)
            r = ep.step({"text": "<tool: bash>\ncd /tmp && export K=v && echo hi\n</tool>"})
            self.assertEqual(r.observation["output"], "hi")
            self.assertFalse(r.done)
            self.assertEqual(ep.state()["step_count"], 1)
            with ep.clone() as branch:
                r = branch.step({"tool": "bash", "arguments": "pwd; echo $K"})
                self.assertEqual(r.observation["output"], "/tmp\nv")
                self.assertEqual(branch.state()["step_count"], 2)
            self.assertEqual(ep.state()["step_count"], 1)
        with self.assertRaises(ServeError) as cm:
            ep.state()
        self.assertEqual(cm.exception.status, 404)

    def test_checkpoints(self):
        with self.client.create(task_id=TASK) as ep:
            ep.step({"tool": "bash", "arguments": "echo one > /repo/one.txt; cd /tmp; export K=v"})
            cp = ep.checkpoint()
            self.assertEqual((cp["step_count"], cp["depth"]), (1, 1))
            ep.step({"tool": "bash", "arguments": "echo two > /repo/one.txt; export K=w"})
            st = ep.rollback(cp)
            self.assertEqual(st["step_count"], 1)
            r = ep.step({"tool": "bash", "arguments": "pwd; echo $K; cat /repo/one.txt"})
            self.assertEqual(r.observation["output"], "/tmp\nv\none")
            with ep.branch(cp["checkpoint_id"]) as b:
                r = b.step({"tool": "bash", "arguments": "cat /repo/one.txt"})
                self.assertEqual(r.observation["output"], "one")
                self.assertEqual(b.state()["step_count"], 2)
            self.assertEqual(len(ep.checkpoints()["checkpoints"]), 1)
            ep.release(cp)
            with self.assertRaises(ServeError) as cm:
                ep.rollback(cp)
            self.assertEqual(cm.exception.status, 404)
        with self.client.session() as s:
            s.reset(task_id=TASK)
            s.step({"tool": "bash", "arguments": "echo ws > /repo/ws.txt"})
            cp = s.checkpoint()
            s.step({"tool": "bash", "arguments": "rm /repo/ws.txt"})
            s.rollback(cp)
            r = s.step({"tool": "bash", "arguments": "cat /repo/ws.txt"})
            self.assertEqual(r.observation["output"], "ws")
            branch = s.branch(cp)["episode_id"]
            with self.client.session(episode_id=branch) as b:
                r = b.step({"tool": "bash", "arguments": "cat /repo/ws.txt"})
                self.assertEqual(r.observation["output"], "ws")
            self.assertEqual(len(s.checkpoints()["checkpoints"]), 1)
            s.release(cp)
            self.assertEqual(s.checkpoints()["checkpoints"], [])

    def test_errors(self):
        with self.assertRaises(ServeError) as cm:
            self.client.create(task_id="no-such-task")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "VALIDATION_ERROR"))
        with self.client.create(task_id=TASK) as ep:
            with self.assertRaises(ServeError) as cm:
                ep.step({"text": "x", "colour": 1})
            self.assertEqual(cm.exception.code, "VALIDATION_ERROR")
        with self.assertRaises(ServeError) as cm:
            Client(URL, token="wrong").create(task_id=TASK)
        self.assertEqual(cm.exception.status, 401)

    def test_session_ws(self):
        # Whatever websockets is installed, the standard-library client is
        # what this tests (Debian 12's websockets 10 has no sync client).
        from cwmserve import _ws
        big = 70000  # more than 65535: 64-bit frame lengths both ways
        with self.client.session() as s:
            self.assertIsInstance(s._ws, _ws.Connection)
            r = s.reset(task_id=TASK)
            self.assertEqual(len(r.observation["messages"]), 2)
            r = s.step({"text": "<tool: bash>\ncd /tmp && export K=v && echo hi\n</tool>"})
            self.assertEqual(r.observation["output"], "hi")
            self.assertFalse(r.done)
            r = s.step({"text": "<tool: bash>\nhead -c %d /dev/zero | tr '\\0' x # %s\n</tool>" % (big, "y" * big)})
            self.assertEqual(r.observation["output"], "x" * big)
            st = s.state()
            self.assertEqual(st["step_count"], 2)
            branch = s.clone()["episode_id"]
            self.assertNotEqual(branch, st["episode_id"])
            with self.assertRaises(ServeError) as cm:
                s._call({"type": "nonsense"}, "observation")
            self.assertEqual(cm.exception.code, "UNKNOWN_TYPE")
            self.assertEqual(s.state()["step_count"], 2)
            # The clone closes with s unless another session attaches to it.
            with self.client.session(episode_id=branch) as b:
                r = b.step({"tool": "bash", "arguments": "pwd; echo $K"})
                self.assertEqual(r.observation["output"], "/tmp\nv")
                self.assertEqual(b.state()["step_count"], 3)
        with self.assertRaises(_ws.WebSocketError) as cm:
            Client(URL, token="wrong").session()
        self.assertIn("401", str(cm.exception))


if __name__ == "__main__":
    unittest.main()
