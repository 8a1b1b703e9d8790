"""A scripted backend for tests: canned replies, fixed costs, no model."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opar_sim.core.llm import Completion, JsonSchema, LLMError, Message
from opar_sim.llm.base import BackendBase

ScriptedReply = str | LLMError | Callable[[Sequence[Message], JsonSchema], str]


class ScriptedBackend(BackendBase):
    """Plays back ``replies`` in order (the last repeats); an LLMError entry is raised.

    A callable entry gets the messages and the schema sent and returns the text.
    Every reply costs ``prompt_tokens`` + ``completion_tokens`` and ``seconds``.
    """

    name = "scripted"

    def __init__(
        self,
        replies: Sequence[ScriptedReply],
        *,
        model: str = "scripted",
        prompt_tokens: int = 100,
        completion_tokens: int = 20,
        seconds: float = 0.5,
    ) -> None:
        if not replies:
            raise ValueError("a scripted backend needs at least one reply")
        super().__init__(model)
        self.replies = list(replies)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.seconds = seconds
        self.requests: list[tuple[list[Message], JsonSchema, int | None]] = []

    def generate(
        self, messages: Sequence[Message], json_schema: JsonSchema, seed: int | None
    ) -> Completion:
        """Record the request and play back the next reply (raising an LLMError entry)."""
        reply = self.replies[min(len(self.requests), len(self.replies) - 1)]
        self.requests.append((list(messages), json_schema, seed))
        if isinstance(reply, LLMError):
            raise reply
        text = reply if isinstance(reply, str) else reply(messages, json_schema)
        return Completion(
            text, self.prompt_tokens, self.completion_tokens, self.seconds, self.seconds
        )
