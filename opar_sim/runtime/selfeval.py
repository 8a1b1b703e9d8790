"""The self-evaluation a law reads, made by one extra model call per step of a real agent.

No agent framework produces δ_task, δ_act, δ_plan and a confidence; the laws other than
the trace laws read them.  ``SelfEvaluator`` asks a model for them after each step, with
the prompt and the JSON schema the LLM agent uses for its own Reflect
(``llm.prompts.evaluate_messages``, ``llm.schemas.evaluation_schema``), through any
``LLMBackend``: ``OllamaBackend`` (an Ollama server) or ``OpenAICompatibleBackend`` (any
``/v1/chat/completions`` endpoint with JSON-schema output: vLLM, llama.cpp's server, LM
Studio, OpenAI).  The call costs tokens and time in the host: ``spent`` counts them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

import httpx

from opar_sim.core.llm import BackendHTTPError, BackendUnavailable, Completion, JsonSchema, Message
from opar_sim.core.task import ToolSpec
from opar_sim.core.types import Evaluation, Observation
from opar_sim.llm.base import BackendBase
from opar_sim.llm.prompts import evaluate_messages
from opar_sim.llm.schemas import EvaluationOut, evaluation_schema
from opar_sim.runtime.gate import HostStep
from opar_sim.runtime.laws import LawError

HISTORY = 4  # earlier steps shown to the evaluator (small models lose long contexts)


class OpenAICompatibleBackend(BackendBase):
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        temperature: float = 0.0,
        max_tokens: int = 256,
    ) -> None:
        """Build it.

        Args:
            model: The model's name at the endpoint.
            base_url: The endpoint's base, e.g. ``http://127.0.0.1:8000/v1``.
            api_key: Sent as a bearer token when given.
            timeout: Seconds to wait for a reply.
            temperature: Sampling temperature.
            max_tokens: The reply's token limit.
        """
        super().__init__(model)
        self.base_url = base_url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = timeout
        self.temperature = temperature
        self.max_tokens = max_tokens

    def generate(
        self, messages: Sequence[Message], json_schema: JsonSchema, seed: int | None
    ) -> Completion:
        """One chat completion constrained to ``json_schema`` (``response_format``)."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "evaluation", "schema": json_schema, "strict": True},
            },
        }
        if seed is not None:
            body["seed"] = seed
        started = time.perf_counter()
        url = f"{self.base_url}/chat/completions"
        try:
            reply = httpx.post(url, json=body, headers=self.headers, timeout=self.timeout)
        except httpx.ConnectError as exc:
            raise BackendUnavailable(f"cannot reach {url} ({exc})") from None
        except httpx.HTTPError as exc:
            raise BackendHTTPError(f"{url}: {type(exc).__name__}: {exc}") from None
        if reply.status_code != 200:
            raise BackendHTTPError(f"{url} failed (HTTP {reply.status_code}): {reply.text[:200]}")
        try:
            data = reply.json()
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            text = str(choice["message"].get("content") or "")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise BackendHTTPError(f"{url} sent a malformed reply ({exc!r})") from None
        wall = time.perf_counter() - started
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            model_seconds=wall,
            wall_seconds=wall,
            done_reason="length" if choice.get("finish_reason") == "length" else "stop",
        )


def describe_step(host: HostStep) -> str:
    """One line of a host step: its calls, their results or errors, or the model's text."""
    if not host.calls:
        return f"answered: {host.answer[:200]}" if host.answer else "no tool call"
    parts = []
    for call in host.calls:
        args = json.dumps(dict(call.args), sort_keys=True, default=str)[:120]
        outcome = f"error: {call.error}" if call.error else f"-> {(call.result or '')[:160]}"
        parts.append(f"{call.name}({args}) {outcome}")
    return "; ".join(parts)


class SelfEvaluator:
    """Makes a step's ``Evaluation`` with one structured model call (module docstring)."""

    def __init__(
        self, backend: BackendBase, goal: str, tools: Sequence[str], *, seed: int | None = None
    ) -> None:
        """Build it.

        Args:
            backend: Where the call goes (``OllamaBackend``, ``OpenAICompatibleBackend``).
            goal: The agent's task, as the evaluator should judge progress toward it.
            tools: The agent's tool names (the schema's ``next_action`` choices).
            seed: The generations' seed (None: the backend's default).
        """
        self.backend = backend
        self.tools = list(tools)
        self.seed = seed
        lines = "\n".join(f"- {name}" for name in self.tools)
        self.system: Message = {
            "role": "system",
            "content": (
                "You evaluate an agent's progress honestly after each of its steps. Reply "
                f"with JSON only.\nGoal: {goal}\nTools:\n{lines}"
            ),
        }
        no_specs = cast(Mapping[str, ToolSpec], dict.fromkeys(self.tools))
        self.schema = evaluation_schema(no_specs)
        self.spent = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self.wall_seconds = 0.0

    def __call__(self, host: HostStep, history: Sequence[HostStep]) -> Evaluation:
        """The evaluation of ``host`` given the steps before it.

        Raises:
            LawError: when the model's reply is invalid twice (the law has nothing to read).
        """
        past = [f"step {i + 1}: {describe_step(s)}" for i, s in enumerate(history)][-HISTORY:]
        obs = Observation(text=(host.text or host.answer)[:400], visible_progress=0.0)
        messages = evaluate_messages(self.system, past, obs, describe_step(host))
        reply = self.backend.chat(messages, EvaluationOut, json_schema=self.schema, seed=self.seed)
        for c in reply.attempts:
            self.spent["calls"] += 1
            self.spent["prompt_tokens"] += c.prompt_tokens
            self.spent["completion_tokens"] += c.completion_tokens
            self.wall_seconds += c.wall_seconds
        out = reply.value
        if out is None:
            raise LawError(f"the self-evaluation failed twice: {reply.error}")
        return Evaluation(
            out.delta_task,
            out.delta_act,
            out.delta_plan,
            out.confidence,
            out.critique,
            tuple(out.missing),
        )
