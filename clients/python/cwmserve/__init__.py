"""Python client of ``cwm serve``, cwm's RL environment server.

The REST API needs nothing beyond the standard library::

    from cwmserve import Client

    client = Client("http://127.0.0.1:8000", token=None)
    with client.create(task_id="textkit__operators-d21ee123c351") as ep:
        messages = ep.observation["messages"]          # the prompt
        result = ep.step({"text": "<tool: bash>\\nls\\n</tool>"})
        print(result.observation["output"], result.reward, result.done)
        branch = ep.clone()                            # same files, same shell state
        cp = ep.checkpoint()                           # frozen: nothing copied
        ep.rollback(cp)                                # back to it
        other = ep.branch(cp)                          # a new episode from it

The WebSocket ``/ws`` (OpenEnv's session protocol, one episode per
connection) is ``Client.session()``; it uses the ``websockets`` package
(11 or later, for its synchronous client) when installed and a small
standard-library client otherwise. OpenEnv's own ``EnvClient`` speaks
``/ws`` too; ``cwmserve.openenv.CwmEnvClient`` is OpenEnv's
``GenericEnvClient`` with cwm's ``clone`` (it needs ``openenv`` or
``openenv-core`` installed): see docs/serve.md.
"""

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, NamedTuple, Optional

__all__ = ["Client", "Episode", "Session", "StepResult", "ServeError"]

# The client's version follows cwm's: a release of cwm vX.Y.Z is the
# client's X.Y.Z; between releases (cwm version says "dev"), the next one
# with .dev0.
__version__ = "0.1.0.dev0"


class ServeError(Exception):
    """An error the server answered: the HTTP status (0 over /ws), OpenEnv's
    error code (CAPACITY_REACHED, VALIDATION_ERROR, SESSION_ERROR, ...) and
    the message."""

    def __init__(self, status: int, code: str, message: str, retry_after: Optional[float] = None):
        super().__init__(f"{status or ''} {code}: {message}".strip())
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class StepResult(NamedTuple):
    """OpenEnv's StepResult: the observation (a dict), the reward and done."""

    observation: Dict[str, Any]
    reward: Optional[float]
    done: bool


class Client:
    """A client of one server. ``token`` is sent as ``Authorization: Bearer``.
    ``timeout`` bounds one HTTP request in seconds (None: none; a step that
    grades a patch runs the hidden tests and may take minutes)."""

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: Optional[float] = None):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)
            except ValueError:
                err = {"detail": raw.decode(errors="replace")}
            retry = e.headers.get("Retry-After")
            raise ServeError(e.code, err.get("code", ""), err.get("detail", ""),
                             float(retry) if retry else None) from None
        return json.loads(raw) if raw else None

    def health(self) -> Dict[str, Any]:
        return self._request("GET", "/health")

    def schema(self, kind: Optional[str] = None) -> Dict[str, Any]:
        q = "?kind=" + urllib.parse.quote(kind) if kind else ""
        return self._request("GET", "/schema" + q)

    def metadata(self) -> Dict[str, Any]:
        return self._request("GET", "/metadata")

    def episodes(self) -> Dict[str, Any]:
        """The open episodes' states, and the server's capacity."""
        return self._request("GET", "/v1/episodes")

    def create(self, wait: float = 0.0, **reset: Any) -> "Episode":
        """Starts an episode (POST /v1/episodes) with a reset's data:
        ``task_id=`` (swe), ``kind="shell", env=``, ``kind="trace",
        trace_id=``, ``protocol=``, ``model=``, ... When the server is at
        capacity, waits up to ``wait`` seconds, as its Retry-After says."""
        deadline = time.monotonic() + wait
        while True:
            try:
                r = self._request("POST", "/v1/episodes", reset)
                return Episode(self, r["episode_id"], r["observation"], r.get("reward"), r.get("done", False))
            except ServeError as e:
                if e.code != "CAPACITY_REACHED" or time.monotonic() >= deadline:
                    raise
                time.sleep(min(e.retry_after or 1.0, max(deadline - time.monotonic(), 0.05)))

    def episode(self, episode_id: str) -> "Episode":
        """An open episode by id (a clone made over /ws, say)."""
        st = self._request("GET", "/v1/episodes/" + urllib.parse.quote(episode_id))
        return Episode(self, episode_id, None, st.get("reward"), st.get("done", False))

    def session(self, episode_id: Optional[str] = None) -> "Session":
        """A /ws session; ``episode_id`` attaches it to an open episode
        instead of a new slot."""
        return Session(self, episode_id)


def _checkpoint_id(checkpoint: Any) -> str:
    if isinstance(checkpoint, dict):
        checkpoint = checkpoint["checkpoint_id"]
    return urllib.parse.quote(str(checkpoint), safe="")


class Episode:
    """An episode over REST. It is owned by nobody: close it (or use it as a
    context manager), or the server's idle timeout will."""

    def __init__(self, client: Client, episode_id: str, observation, reward, done):
        self.client = client
        self.id = episode_id
        self.observation = observation
        self.reward = reward
        self.done = done

    def _path(self, tail: str = "") -> str:
        return "/v1/episodes/" + urllib.parse.quote(self.id) + tail

    def step(self, action: Dict[str, Any]) -> StepResult:
        r = self.client._request("POST", self._path("/step"), {"action": action})
        self.observation, self.reward, self.done = r["observation"], r.get("reward"), r.get("done", False)
        return StepResult(self.observation, self.reward, self.done)

    def state(self) -> Dict[str, Any]:
        return self.client._request("GET", self._path())

    def clone(self, episode_id: Optional[str] = None) -> "Episode":
        """Branches the episode: a new one with the same files, shell
        directory and exports, conversation and turn count."""
        body = {"episode_id": episode_id} if episode_id else {}
        st = self.client._request("POST", self._path("/clone"), body)
        return Episode(self.client, st["episode_id"], self.observation, self.reward, st.get("done", False))

    def checkpoint(self) -> Dict[str, Any]:
        """Freezes the episode's files, shell state and record as a
        checkpoint: its ``checkpoint_id``, ``step_count``, ``depth`` (frozen
        layers) and ``bytes``. Running processes do not survive it. Past
        ``--max-checkpoints`` or ``--checkpoint-bytes``: ServeError with code
        CHECKPOINT_LIMIT."""
        return self.client._request("POST", self._path("/checkpoints"), {})

    def checkpoints(self) -> Dict[str, Any]:
        """The episode's checkpoints (``checkpoints``, oldest first), the
        ``bytes`` their layers hold, and the caps."""
        return self.client._request("GET", self._path("/checkpoints"))

    def rollback(self, checkpoint: Any) -> Dict[str, Any]:
        """Brings the episode back to a checkpoint (its id, or what
        ``checkpoint`` returned); the episode's state after."""
        st = self.client._request("POST", self._path("/checkpoints/" + _checkpoint_id(checkpoint) + "/rollback"), {})
        self.done = st.get("done", False)
        return st

    def branch(self, checkpoint: Any, episode_id: Optional[str] = None) -> "Episode":
        """A new episode from a checkpoint, on its own sandbox over the
        checkpoint's frozen layers."""
        body = {"episode_id": episode_id} if episode_id else {}
        st = self.client._request("POST", self._path("/checkpoints/" + _checkpoint_id(checkpoint) + "/branch"), body)
        return Episode(self.client, st["episode_id"], None, None, st.get("done", False))

    def release(self, checkpoint: Any) -> None:
        """Drops a checkpoint; its layers are freed once nothing stands on
        them."""
        self.client._request("DELETE", self._path("/checkpoints/" + _checkpoint_id(checkpoint)))

    def close(self) -> None:
        try:
            self.client._request("DELETE", self._path())
        except ServeError as e:
            if e.status != 404:
                raise

    def __enter__(self) -> "Episode":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Session:
    """A /ws session: OpenEnv's messages (reset, step, state, close) and cwm's
    clone, one episode at a time. It speaks through ``websockets`` (11 or
    later) when that is installed, otherwise through the standard library
    alone (``cwmserve._ws``)."""

    def __init__(self, client: Client, episode_id: Optional[str] = None):
        try:
            from websockets.sync.client import connect
        except ImportError:
            from ._ws import connect
        url = "ws" + client.base_url[len("http"):] + "/ws"
        q = {}
        if episode_id:
            q["episode_id"] = episode_id
        if client.token:
            q["token"] = client.token  # headers vary across websockets versions
        if q:
            url += "?" + urllib.parse.urlencode(q)
        self._ws = connect(url, max_size=None)

    def _call(self, msg: Dict[str, Any], want: str) -> Dict[str, Any]:
        self._ws.send(json.dumps(msg))
        reply = json.loads(self._ws.recv())
        if reply.get("type") == "error":
            d = reply.get("data", {})
            raise ServeError(0, d.get("code", ""), d.get("message", ""))
        if reply.get("type") != want:
            raise ServeError(0, "", f"reply of type {reply.get('type')!r}, want {want!r}")
        return reply["data"]

    def reset(self, **data: Any) -> StepResult:
        d = self._call({"type": "reset", "data": data}, "observation")
        return StepResult(d["observation"], d.get("reward"), d.get("done", False))

    def step(self, action: Dict[str, Any]) -> StepResult:
        d = self._call({"type": "step", "data": action}, "observation")
        return StepResult(d["observation"], d.get("reward"), d.get("done", False))

    def state(self) -> Dict[str, Any]:
        return self._call({"type": "state"}, "state")

    def clone(self) -> Dict[str, Any]:
        """Branches the episode; the clone's state (its ``episode_id``). It
        belongs to this session until another session attaches to it."""
        return self._call({"type": "clone"}, "clone")

    def checkpoint(self) -> Dict[str, Any]:
        """Freezes the episode as a checkpoint (see Episode.checkpoint)."""
        return self._call({"type": "checkpoint"}, "checkpoint")

    def checkpoints(self) -> Dict[str, Any]:
        return self._call({"type": "checkpoints"}, "checkpoints")

    def rollback(self, checkpoint: Any) -> Dict[str, Any]:
        return self._call({"type": "rollback", "data": {"checkpoint_id": _checkpoint_id(checkpoint)}}, "rollback")

    def branch(self, checkpoint: Any, episode_id: Optional[str] = None) -> Dict[str, Any]:
        """A new episode from a checkpoint; its state. Like a clone it
        belongs to this session until another attaches to it."""
        data = {"checkpoint_id": _checkpoint_id(checkpoint)}
        if episode_id:
            data["episode_id"] = episode_id
        return self._call({"type": "branch", "data": data}, "branch")

    def release(self, checkpoint: Any) -> None:
        self._call({"type": "release_checkpoint", "data": {"checkpoint_id": _checkpoint_id(checkpoint)}}, "release_checkpoint")

    def close(self) -> None:
        try:
            self._ws.send(json.dumps({"type": "close"}))
        finally:
            self._ws.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
