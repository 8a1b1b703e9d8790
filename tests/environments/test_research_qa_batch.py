"""The vectorised research_qa against the scalar task, corpus by corpus, action by action.

Each row of a ``ResearchQABatch`` is copied into a scalar ``ResearchQA`` (wrapped
in the real ``delay`` and ``noise`` wrappers); both take the same actions (the
scalar expert's or one of its wrong moves, at random), the same search noise (the
scalar task's own, seeded by world and query, handed to the twin) and the same
vanishing documents.  After every call the tool's ``ok`` and result tokens, the
progress, ``complete``, the delayed and noisy visible progress, the expert's next
action and the answer must be equal on every row.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
import simpy

from environments import research_qa_batch as rq
from environments.research_qa import Document, ResearchQA, ResearchQAParams
from environments.wrappers import DelayedObservation, ObservationNoise, wrap
from opar_sim.core.types import Action

N, STEPS = 120, 25


class Noise:
    """A stand-in generator: each fresh search's noise is the scalar task's for its query."""

    def __init__(self) -> None:
        self.queue: list[np.ndarray] = []

    def standard_normal(self, shape: tuple[int, ...] | int) -> np.ndarray:
        if isinstance(shape, tuple):  # a fresh search's noise, one row per searching world
            rows = [self.queue.pop(0) for _ in range(shape[0])]
            return np.array(rows).reshape(shape)
        return np.zeros(shape)  # the noise wrapper's draws: the test copies the scalar ones


def scalar_copy(world: rq.ResearchQABatch, i: int) -> ResearchQA:
    """Row ``i`` of the twin as a scalar task (its salt seeds the search noise)."""
    task = ResearchQA(**world.params.model_dump())
    task.docs = [
        Document(j, int(world.topic[i, j]), bool(world.supports[i, j])) for j in range(world.d)
    ]
    task.salt = 1000 + i
    return task


def encode(task: ResearchQA, action: Action) -> tuple[int, int]:
    """The twin's codes (tool, argument) of a scalar action on ``task``."""
    if action.tool == "answer":
        return rq.ANSWER, 0
    if action.tool == "fetch":
        return rq.FETCH, int(action.arg("doc"))
    query = str(action.arg("query"))
    if query in task.searches:
        return rq.REPEAT, -1
    return rq.SEARCH, task._topic_of(query)


def search_noise(task: ResearchQA, query: str) -> np.ndarray:
    seq = np.random.SeedSequence([task.salt, zlib.crc32(query.encode())])
    return np.random.Generator(np.random.PCG64(seq)).standard_normal(len(task.docs))


def test_twin_matches_the_wrapped_scalar_task_action_by_action() -> None:
    params = ResearchQAParams(n_docs=12, tools={"failure_rate": 0.0, "timeout": 1e9})
    rng = np.random.default_rng(5)
    specs = [{"name": "delay", "steps": 2}, {"name": "noise", "sigma": 0.2}]
    tasks = [wrap(ResearchQA(**params.model_dump()), specs) for _ in range(N)]
    delay, noise = tasks[0].task, tasks[0]
    assert isinstance(delay, DelayedObservation) and isinstance(noise, ObservationNoise)
    world = rq.ResearchQABatch.from_task(tasks[0])
    world.reset(N, rng)
    fake = Noise()
    world._rng = fake  # type: ignore[assignment]
    envs = []
    for i, task in enumerate(tasks):
        env = simpy.Environment()
        task.reset(env, np.random.default_rng(i), np.random.default_rng(N + i))
        inner = task.unwrapped
        assert isinstance(inner, ResearchQA)
        copy = scalar_copy(world, i)
        inner.docs, inner.salt = copy.docs, copy.salt
        task.task._on_reset()  # the delay queue starts from the copied corpus
        envs.append(env)
    world.offset = np.array([t._offset for t in tasks])
    world.queue[:] = world._inner_visible()[:, None]
    tools = set()
    for step in range(STEPS):
        if step % 3 == 2:  # a document vanishes in some rows (the disturbance's hook)
            rows = np.flatnonzero(rng.random(N) < 0.5)
            before = world.vanished.copy()
            world._disturb(rows, rng)
            for i, j in zip(*np.nonzero(world.vanished != before), strict=True):
                tasks[i].unwrapped.docs[j].vanished = True
        tool, arg = world.expert()
        chosen = []
        for i, task in enumerate(tasks):
            inner = task.unwrapped
            expert = inner.expert_action()
            assert (int(tool[i]), int(arg[i]) if tool[i] != rq.ANSWER else 0) == encode(
                inner, expert
            ), (step, i, expert)
            wrong = inner.wrong_actions()
            pick = expert if rng.random() < 0.5 else wrong[int(rng.integers(len(wrong)))]
            chosen.append(pick)
        codes = np.array([encode(t.unwrapped, a) for t, a in zip(tasks, chosen, strict=True)])
        tools.update(codes[:, 0].tolist())
        for i, (task, action) in enumerate(zip(tasks, chosen, strict=True)):
            if codes[i, 0] == rq.SEARCH:
                fake.queue.append(search_noise(task.unwrapped, str(action.arg("query"))))
        results = []
        for task, action, env in zip(tasks, chosen, envs, strict=True):
            process = env.process(task.execute(action))
            env.run(process)
            results.append(process.value)
        action_codes = (codes[:, 0].astype(np.int8), codes[:, 1].astype(np.int32))
        everyone = np.ones(N, bool)
        ok, tokens = world.apply(everyone, action_codes)
        world.after_call(everyone, np.zeros(N), fake)  # type: ignore[arg-type]
        world.offset = np.array([t._offset for t in tasks])
        visible = world.visible_progress()
        progress, complete = world.progress(), world.complete()
        answers = world.answers(world.answer_fields())
        for i, (task, result) in enumerate(zip(tasks, results, strict=True)):
            where = (step, i, chosen[i])
            assert bool(ok[i]) == result.ok and int(tokens[i]) == result.tokens, where
            assert progress[i] == task.progress and bool(complete[i]) == task.complete, where
            assert visible[i] == task.observe().visible_progress, where
            assert answers[i] == task.answer(), where
    assert tools == {rq.SEARCH, rq.REPEAT, rq.FETCH, rq.ANSWER}


def stable_ranking(score: np.ndarray, gone: np.ndarray, count: int) -> np.ndarray:
    """The reference: a stable argsort of the negated scores, vanished documents last."""
    return np.argsort(-np.where(gone, -np.inf, score), axis=1, kind="stable")[:, :count]


@pytest.mark.parametrize(("docs", "count"), [(16, 4), (5, 8), (40, 7)])
def test_a_search_lists_what_a_stable_argsort_lists_even_where_scores_tie(docs, count) -> None:
    rng = np.random.default_rng(docs)
    world = rq.ResearchQABatch(ResearchQAParams(n_docs=docs, results_per_search=count))
    world.reset(600, rng)
    score = rng.standard_normal((600, docs))
    # ties the float sort cannot tell apart: one ulp, exact, zeros of both signs
    score[::3, 1] = np.nextafter(score[::3, 0], np.inf)
    score[1::5, 2] = score[1::5, 3]
    score[2::7, :3] = 0.0
    score[2::7, 3] = -0.0
    gone = rng.random((600, docs)) < 0.2
    gone[::11] = True
    world.vanished = gone
    rows = np.flatnonzero(rng.random(600) < 0.7)
    listed = world._rank(rows, score[rows].copy())
    assert np.array_equal(listed, stable_ranking(score[rows], gone[rows], count))
    # more vanish; a repeat lists the same documents as a stable argsort (the vanished
    # ones, which a search does not show, in any order)
    world.vanished = gone | (rng.random(gone.shape) < 0.2)
    again, expected = world._rerank(rows), stable_ranking(score[rows], world.vanished[rows], count)
    shown = ~np.take_along_axis(world.vanished[rows], expected, axis=1)
    assert np.array_equal(~np.take_along_axis(world.vanished[rows], again, axis=1), shown)
    assert np.array_equal(np.where(shown, again, -1), np.where(shown, expected, -1))
    world.vanished = np.zeros_like(gone)  # and with nothing vanished
    listed = world._rank(rows, score[rows].copy())
    assert np.array_equal(listed, stable_ranking(score[rows], gone[rows] & False, count))


def test_the_float_sort_hands_back_the_rows_whose_scores_tie() -> None:
    keys = np.array([[3.0, 1.0, 2.0, 0.5], [1.0, np.nextafter(1.0, 2.0), 5.0, 6.0]])
    columns, bad = rq.least_columns(keys.copy(), 2)
    assert columns[0].tolist() == [3, 1] and bad.tolist() == [1]
    gone = np.array([[rq.GONE, rq.GONE, 0.25, rq.GONE]])  # ties of ``same`` stand in order
    columns, bad = rq.least_columns(gone.copy(), 3, rq.GONE)
    assert columns.tolist() == [[2, 0, 1]] and bad.size == 0
