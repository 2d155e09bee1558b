"""OpenEnv's client with cwm's ``clone``, for trainers written for OpenEnv.

``CwmEnvClient`` is OpenEnv's ``GenericEnvClient`` (``openenv`` 0.10 or
the legacy ``openenv-core`` 0.3, whichever is installed) plus the one
message cwm adds to the protocol::

    from cwmserve.openenv import CwmEnvClient

    with CwmEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        env.reset(task_id="calc-1")
        env.step({"text": "<tool: bash>\\nls\\n</tool>"})
        branch = env.clone(episode_id="calc-1-b")     # the clone's state
    # The clone belongs to the connection that made it (it closes with it)
    # until another attaches to it:
    other = CwmEnvClient.attach("http://127.0.0.1:8000", "calc-1-b").sync()

``clone`` is a coroutine like the client's own methods, so that
``.sync()`` wraps it in both releases.
"""

from typing import Any, Dict, Optional
from urllib.parse import urlencode

from openenv.core.generic_client import GenericEnvClient

__all__ = ["CwmEnvClient"]


class CwmEnvClient(GenericEnvClient):
    """OpenEnv's GenericEnvClient with cwm's clone and attach."""

    async def clone(self, episode_id: Optional[str] = None) -> Dict[str, Any]:
        """Branch the session's episode: a new episode with its own
        sandbox holding a copy of the files, the same shell state and
        conversation; returns its state (its ``episode_id`` among it).
        A server error raises RuntimeError, as the client's other calls do."""
        message: Dict[str, Any] = {"type": "clone"}
        if episode_id is not None:
            message["data"] = {"episode_id": episode_id}
        response = await self._send_and_receive(message)
        return response.get("data", {})

    @classmethod
    def attach(cls, base_url: str, episode_id: str, **kwargs: Any) -> "CwmEnvClient":
        """A client whose session is the open episode ``episode_id`` (a
        clone, or one made over REST), instead of a new one: it owns it
        from then on."""
        client = cls(base_url=base_url, **kwargs)
        sep = "&" if "?" in client._ws_url else "?"
        client._ws_url += sep + urlencode({"episode_id": episode_id})
        return client
