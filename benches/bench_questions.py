"""Recall of questions asked in other words, after compaction moved the answers away.

``lossless.demo.questions`` plants facts in user turns of long agent conversations
(tool calls with their outputs, replies, requests) and asks a paraphrased question
for each; the conversations are recorded through ``Session.record`` into a
6,000-token window with the built-in extractive summariser, so every answer turn
is out of view when the questions are asked. A question is answered in the top k
when an answer turn, or a summary whose span holds it, is among grep's first k hits.

Beside lossless ``grep``: a plain BM25 over the raw turns (Okapi, lowercased
words, no stemming or stopwords), and grep with every word of the question
required (what grep did before it ranked any word). Target: lossless above the
baseline at top 5 and top 10.

By default (``--benchmark-disable``) 2 conversations of 300 turns, 10 questions
each. Fuller run::

    LOSSLESS_BENCH_FULL=1 .venv/bin/pytest benches/bench_questions.py --benchmark-enable -s
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import FIGURES, FULL, Figure
from lossless.demo.questions import QuestionReport, measure

# Conversations, turns per conversation, planted facts per conversation.
SHAPE = (10, 600, 24) if FULL else (2, 300, 10)
SEED = 1729


@pytest.mark.benchmark(group="recall-questions")
def test_questions_after_compaction(benchmark: Any, tmp_path: Path) -> None:
    conversations, turns, facts = SHAPE
    reports: list[QuestionReport] = []

    def run() -> None:
        directory = tmp_path / f"round-{len(reports)}"
        directory.mkdir()

        async def main() -> QuestionReport:
            return await measure(
                directory, conversations=conversations, turns=turns, facts=facts, seed=SEED
            )

        reports.append(anyio.run(main))

    benchmark.pedantic(run, rounds=1, iterations=1, warmup_rounds=0)
    report = reports[-1]
    assert report.out_of_view == 1.0
    assert report.lossless.top5 > report.baseline.top5
    assert report.lossless.top10 >= report.baseline.top10
    shape = f"{report.questions} questions, {conversations}x{turns} turns"
    FIGURES["questions lossless grep"] = Figure(
        f"questions: lossless grep ({shape})",
        report.lossless_seconds,
        "above the baseline at top 5 and top 10",
        {
            "top5": f"{report.lossless.top5:.1%}",
            "top10": f"{report.lossless.top10:.1%}",
            "every_word_required_top10": f"{report.all_words.top10:.1%}",
        },
    )
    FIGURES["questions baseline"] = Figure(
        "questions: plain BM25 over the raw turns",
        report.baseline_seconds,
        "",
        {"top5": f"{report.baseline.top5:.1%}", "top10": f"{report.baseline.top10:.1%}"},
    )
    benchmark.extra_info.update(
        questions=report.questions,
        lossless_top5=report.lossless.top5,
        lossless_top10=report.lossless.top10,
        baseline_top5=report.baseline.top5,
        baseline_top10=report.baseline.top10,
    )
