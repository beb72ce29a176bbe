"""The optional faithfulness judge: one yes/no per (sentence, cited passage)."""
from __future__ import annotations

import json

import httpx
import pytest

from evals.judge import JudgeConfig, JudgeError, judge_answer


def judge_client(reply) -> tuple[httpx.Client, list[dict]]:
    asked: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        asked.append(body)
        return httpx.Response(200, json={"choices": [{"message": {"content": reply(body)}}]})

    return httpx.Client(transport=httpx.MockTransport(handler)), asked


CFG = JudgeConfig(url="http://judge.test/v1", model="m")


def test_one_question_per_sentence_and_cited_passage():
    client, asked = judge_client(lambda body: "Yes" if "libcurl" in body["messages"][1]["content"] else "no.")
    answer = "cMCP needs only libcurl [1]. It is written in Rust [1][2]. Uncited claim."
    result = judge_answer(client, CFG, answer, {1: "The only dependency is libcurl.", 2: "Pure C11."})
    assert len(asked) == 3                                  # (s0,1) (s1,1) (s1,2); the uncited sentence asks nothing
    assert result["asked"] == 3
    assert result["supported"] == 2                         # passage 1 mentions libcurl for both sentences
    assert result["unsupported"] == [[1, 2]]
    assert asked[0]["temperature"] == 0 and asked[0]["model"] == "m"


def test_citations_of_unknown_passages_and_refusals_are_not_judged():
    client, asked = judge_client(lambda body: "yes")
    result = judge_answer(client, CFG, "I can't answer that from the provided documents. Maybe [9].", {1: "x"})
    assert result == {"asked": 0, "supported": 0, "unsupported": []} and not asked


def test_a_judge_that_does_not_answer_yes_or_no_is_an_error():
    client, _ = judge_client(lambda body: "Perhaps")
    with pytest.raises(JudgeError, match="not yes/no"):
        judge_answer(client, CFG, "Claim [1].", {1: "text"})


def test_no_url_means_no_judge():
    assert JudgeConfig.from_args(None, "m", "UNSET_ENV") is None
