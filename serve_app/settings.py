"""The one settings class: `ASKDOCS_*` environment variables or `.env`, and
the `args:` of serve_config.yaml (which take precedence over both).

Every limit says why it has its value. API contract bounds (question length,
k range) are fixed by DESIGN.md §4 and live in `serve_app/protocol.py`.
"""
from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from deployments.engines.base import EngineSpec
from deployments.gate_rule import GateRule
from deployments.generator import RetryPolicy
from deployments.prompt import PromptLimits


def default_command(db: str) -> list[str]:
    """The MCP server the Retriever starts when `mcp_command` is not set."""
    return [sys.executable, "-m", "docindex.cli", "serve-mcp", "--db", db]


ENV_PREFIX = "ASKDOCS_"
# A relative `db` is resolved against the askdocs checkout (the folder holding
# serve_app/ and pyproject.toml), never against the Ray worker's working
# directory, which is wherever `ray start` ran. Installed as a package (the
# image) there is no checkout: then it is the working directory (the image's
# WORKDIR, /app, where its Ray processes start).
CODE_DIR = Path(__file__).resolve().parents[1]


def project_dir() -> Path | None:
    """The askdocs checkout this code runs from, or None when it is an installed package."""
    return CODE_DIR if (CODE_DIR / "pyproject.toml").is_file() and (CODE_DIR / "serve_app").is_dir() else None


def resolve_db(db: str, root: Path | None) -> str:
    """`db` made absolute against `root` (the checkout), or the working directory when there is none."""
    path = Path(db).expanduser()
    return str(path if path.is_absolute() else (root or Path.cwd()) / path)


# ASKDOCS_* variables that are not server settings: the client CLI's (ASKDOCS_URL,
# ASKDOCS_API_KEY — the server's keys are ASKDOCS_API_KEYS), scripts/run.sh's, the
# eval judge's, the load test's and the test suite's. Any other ASKDOCS_* name is
# a misspelled setting and stops the server (docs/configuration.md).
NOT_SERVER_SETTINGS = frozenset({"URL", "API_KEY", "PORT", "START_TIMEOUT_S", "JUDGE_API_KEY", "DEMO_COLLECTION",
                                 "WEB_SCREENSHOT", "TEST_KEEP_RAY_TMP", "RUN_DIR"})
NOT_SERVER_PREFIXES = ("LOADTEST_",)


def unknown_variables(environ: Mapping[str, str], fields: set[str]) -> list[str]:
    """One readable line per ASKDOCS_* variable that names no setting."""
    known = {f.upper() for f in fields}
    problems = []
    for name in sorted(environ):
        if not name.upper().startswith(ENV_PREFIX):
            continue
        key = name[len(ENV_PREFIX):].upper()
        if key in known or key in NOT_SERVER_SETTINGS or key.startswith(NOT_SERVER_PREFIXES):
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f" (did you mean {ENV_PREFIX}{close[0]}?)" if close else ""
        problems.append(f"unknown setting variable {name}{hint}")
    return problems


def overridden_variables(args: Mapping[str, Any], environ: Mapping[str, str]) -> list[str]:
    """One line per ASKDOCS_* variable that a YAML arg beats. Under a plain `serve run`
    the YAML's `args` reach Settings as init arguments, which win over the environment;
    `askdocs launch` / `make run` drop such args instead, so the variable wins there
    (serve_app/launcher.py states that precedence). Values are not shown: they may be secrets."""
    named = {name[len(ENV_PREFIX):].lower(): name for name in environ if name.upper().startswith(ENV_PREFIX)}
    return [f"{named[key.lower()]} is overridden by the YAML arg {key!r} (under `serve run` YAML args beat "
            f"ASKDOCS_* variables; drop the arg, or start with `askdocs launch`, where the variable wins)"
            for key in sorted(args) if key.lower() in named]


class Settings(BaseSettings):
    # extra="ignore": a shared .env may hold other programs' keys. YAML args are
    # checked strictly instead, in serve_app.app.load_settings.
    model_config = SettingsConfigDict(env_prefix="ASKDOCS_", env_file=".env", extra="ignore")

    # ---------------------------------------------------------------- HTTP edge
    api_keys: Annotated[list[SecretStr], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated bearer tokens; empty = no auth. Read from the environment "
                    "only in production (YAML args end up in Serve's stored config).")
    max_body_bytes: int = Field(
        16 * 1024, ge=1024,
        description="413 above this: a 2000-character question in JSON is < 9 KB even fully "
                    "escaped, so 16 KB bounds what a client may make us buffer.")
    body_read_timeout_s: float = Field(
        10.0, gt=0,
        description="408 when the request body has not fully arrived within this many seconds: a "
                    "16 KB body takes milliseconds on any real link, so a client trickling bytes "
                    "(slowloris) cannot hold an ingress slot and its buffer for minutes.")
    max_header_count: int = Field(
        64, ge=8,
        description="431 above this many request headers: a browser sends ~15, a proxy adds a few.")
    max_header_bytes: int = Field(
        16 * 1024, ge=1024,
        description="431 above this many header bytes (names + values); under `python -m serve_app.local` "
                    "also the most of a request head uvicorn buffers (+ 8 KB for the request line).")
    header_timeout_s: float = Field(
        10.0, gt=0,
        description="`python -m serve_app.local`: 408 and close when a request head (line + headers) "
                    "has not fully arrived this long after its first byte (slowloris on headers).")
    idle_timeout_s: int = Field(
        5, ge=1,
        description="`python -m serve_app.local`: an idle keep-alive connection closes after this many "
                    "seconds (Serve's proxy: http_options.keep_alive_timeout_s).")
    max_concurrent: int = Field(
        32, ge=1,
        description="Answers in flight per ingress replica before it answers 503. Above the "
                    "Generator's slots + queue so Serve's own queue does the fine-grained "
                    "limiting; this only bounds ingress memory under a flood.")
    retry_after_s: int = Field(
        2, ge=1,
        description="Retry-After on our 503s: about one CPU answer's generation time.")

    # ---------------------------------------------------------------- retrieval
    db: str = Field(
        "var/demo.db",
        description="docindex SQLite file the default MCP command serves (`make index` builds var/demo.db). "
                    "A relative path is resolved against the askdocs checkout (not where `ray start` ran); "
                    "installed as a package (the image), against the working directory (/app there).")
    mcp_command: list[str] | None = Field(
        None, description="MCP server command (argv). Default: `python -m docindex.cli serve-mcp --db DB`.")
    mcp_pool_size: int = Field(
        2, ge=1, le=16,
        description="MCP sessions per Retriever replica: each is a process holding the "
                    "embedder (~150 MB); 2 overlap one slow query with the next.")
    mcp_call_timeout_s: float = Field(
        10.0, gt=0,
        description="Per search call, queue wait included: a query takes ~10 ms; 10 s means the "
                    "index is stuck, not slow.")
    mcp_start_timeout_s: float = Field(
        120.0, gt=0, description="Server start + warm-up (loads the embedder: ~1-5 s, more under load).")
    default_k: int = Field(5, ge=1, le=20, description="Passages retrieved when the request gives no k.")

    # ---------------------------------------------------------------- gate
    gate_min_cosine: float = Field(
        0.29, ge=-1.0, le=1.0,
        description="Refuse before the model when no passage reaches this cosine. Calibrated for "
                    "all-MiniLM-L6-v2 on the dev eval (evals/README.md, `python -m evals.calibrate`): "
                    "answerable questions' best cosine 0.350-0.837, off-topic 0.110-0.343; floor = "
                    "lowest answerable - 0.05. Recalibrate for another embedding model.")
    gate_coverage_weight: float | None = Field(
        0.65, ge=0.0, le=10.0,
        description="With it, a question that clears gate_min_cosine passes only when its evidence, best cosine + "
                    "this weight x best coverage (idf-weighted share of the question's words found in a passage, "
                    "docindex's per-hit coverage) reaches gate_min_evidence: everyday questions reach cosine "
                    "0.3-0.5 on technical docs but not their words. Chosen on dev halves only "
                    "(benchmarks/results/gate_evidence.md). null = the cosine floor alone.")
    gate_min_evidence: float | None = Field(
        0.68, ge=-1.0, le=11.0,
        description="The threshold on best cosine + gate_coverage_weight x best coverage. Dev halves: wrong "
                    "refusals cMCP 0/50, PostgreSQL 1/60, Python 1/60; off-topic refused 8/8, 22/23, 22/23. "
                    "null = the cosine floor alone.")
    gate_noise_margin: float | None = Field(0.15, ge=0.0, le=2.0, description=(
        "A question whose evidence falls short still passes when its best cosine reaches its collection's noise "
        "floor (the third best cosine of 40 everyday questions there: docindex's per-hit noise_floor) + this "
        "margin: questions told as a user's situation in words a manual does not use. Chosen with the floor's "
        "rank on dev data (PostgreSQL and Python dev halves, cMCP, SDL2): 1 wrong refusal of 186 and 2 off-topic "
        "passes of 62 (3 and 2 with the highest probe + 0.155). null = the evidence rule alone."))
    gate_sentence_margin: float | None = Field(0.08, ge=0.0, le=2.0, description=(
        "Such a question also passes when the best cosine of a quotable sentence of its passages (docindex's "
        "per-hit sentence_cosine, from stored quote vectors) reaches the collection's sentence floor (the third "
        "best of 40 everyday questions' best sentences) + this margin. Chosen on dev data (the dev halves, "
        "cMCP, SDL2 and the 19 manuals of stops 34-42 that store quote vectors; fewest errors, ties to the "
        "largest margin): 13 dev errors against 16 without; held out (the test halves and 10 manuals, 3 of them "
        "asked after the choice): 6 of 285 wrongly refused against 16, off-topic refused 120/124 against 121 "
        "(benchmarks/results/gate_noise_floor.md). null = off."))
    gate_score_weights: tuple[float, float, float, float, float] | None = Field(
        (0.1053, 0.0, 0.0, 0.0, 26.7734), description=(
        "The Gate's learned score (deployments/gate_rule.py): bias, then weights of the best cosine's and the "
        "best sentence's gaps over their collection's floors, the best coverage and the passages' mean "
        "cosine's gap; a question passes when the score is >= 0. It replaces gate_min_evidence, "
        "gate_noise_margin and gate_sentence_margin where the passages carry a noise floor and coverage (docindex's "
        "search tools). Fitted on dev data by benchmarks/gate_learned.py (benchmarks/results/gate_learned.md), "
        "which also chose, on leave-one-set-out errors, to weigh only the mean cosine: a question passes when "
        "its passages' mean cosine reaches the noise floor - 0.004. Held out (40 manuals and the test halves): 20 of "
        "781 real questions refused against 32 with the clauses, 3,913 of 4,032 fresh off-topic ones against 3,968. "
        "null = those clauses."))
    gate_name_margin: float | None = Field(1.0, ge=0.0, le=50.0, description=(
        "Where the learned score decides: the score a question needs for each thing it names that its collection "
        "never mentions (a capitalized name such as \"Sonos\" or \"Garmin\", or a word like \"iPhone\", among the "
        "question's words no chunk holds, as docindex sends them; deployments/gate_rule.py), instead of 0: one such "
        "name, and its passages' mean cosine must clear the noise floor by ~0.03 more; two, by ~0.07. Chosen on dev "
        "data by benchmarks/gate_names.py (results/gate_names.md: the largest margin that refuses no more real dev "
        "questions; the dev halves, cMCP and 26 manuals): off-topic questions let through 85 -> 56 of 4,438, real ones "
        "refused 6 -> 6 of 578; held out (the test halves and 17 manuals): 38 -> 23 of 2,916 and 2 -> 2 of 422. Each "
        "name adding the margin is stop 54's, \"iPhone\" a name stop 55's (without it: 58 and 23). null = off."))

    # ---------------------------------------------------------------- prompt / generation
    prompt_max_sources: int = Field(
        4, ge=1, le=20,
        description="Sources put in the prompt (k is capped to it). CPU default 4: prefill runs "
                    "~100 tokens/s on 2 cores, so every source costs seconds of first-token time.")
    prompt_max_chars_per_source: int = Field(
        900, ge=100,
        description="Longer passages are clipped (~225 tokens) for the same prefill reason.")
    max_tokens: int = Field(256, ge=1, le=4096, description="Answer length cap; reaching it sets truncated: true.")
    constrain_citations: bool = Field(
        True,
        description="Engines that can constrain decoding (llamacpp, vllm, openai with a grammar field) may only "
                    "answer the refusal sentence or sentences closed by [n] markers naming this request's "
                    "sources (deployments/citation_grammar.py): invalid citation numbers cannot occur.")
    prompt_secret: SecretStr | None = Field(
        None,
        description="Key of the fence nonce (HMAC of question and passages): identical inputs give identical "
                    "prompts and a document cannot guess the nonce. Unset = a random key per process "
                    "(reproducible within a replica's life); set it to reproduce across restarts and replicas.")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 = greedy: reproducible answers for evals.")
    engine: str = Field("extractive", description="extractive (the default: cited source sentences, no weights) | "
                                                   "llamacpp | vllm | openai | fake")
    model: str = Field("", description="Model name or path, engine-specific ('' = the engine's default).")
    engine_slots: int = Field(
        1, ge=1,
        description="Sequences the engine really runs at once; MUST equal the Generator's "
                    "max_ongoing_requests (checked at start-up).")
    engine_options: dict[str, Any] = Field(default_factory=dict, description="Extra engine kwargs.")
    first_token_retries: int = Field(
        2, ge=0, le=5, description="Engine retries before the first token only (after it, text was already sent).")
    retry_backoff_s: float = Field(0.2, ge=0.0, description="First retry wait; doubles per attempt.")
    stream_interval_s: float = Field(
        0.05, ge=0.0, le=1.0,
        description="Least time between two streamed items of one answer (tokens in between travel together): "
                    "each item is a Serve round, so this bounds the graph's per-token CPU (0 = every token "
                    "ready alone goes alone). The first token is never held.")

    # ---------------------------------------------------------------- checking / stats
    min_support: float = Field(
        0.5, ge=0.0, le=1.0, description="Fraction of a sentence's content words its cited passages must contain.")
    stats_window: int = Field(1000, ge=10, description="Answers kept for /stats percentiles (DESIGN.md §4).")
    cost_per_1k_prompt_tokens: float = Field(0.0, ge=0.0, description="USD, for cost_usd (0 for local engines).")
    cost_per_1k_completion_tokens: float = Field(0.0, ge=0.0, description="USD, for cost_usd.")

    # ---------------------------------------------------------------- observability
    otel_endpoint: str | None = Field(
        None,
        description="OTLP/HTTP collector for one trace per answer (e.g. http://collector:4318; "
                    "/v1/traces is appended). Unset = spans are not recorded (~45 us per answer "
                    "instead of ~120 us) while done/error still carry a trace_id. Off by default "
                    "because an endpoint nobody reads only costs CPU (docs/tracing.md).")

    @field_validator("api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [k.strip() for k in value.split(",") if k.strip()]
        return value

    @field_validator("otel_endpoint", mode="before")
    @classmethod
    def _blank_endpoint_is_none(cls, value: Any) -> Any:
        # `ASKDOCS_OTEL_ENDPOINT=` (set but empty) means off, as in deployments.tracing.
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="before")
    @classmethod
    def _no_unknown_variables(cls, data: Any) -> Any:
        # pydantic-settings drops unknown prefixed names silently (extra="ignore"
        # must stay for other programs' keys in a shared .env).
        problems = unknown_variables(os.environ, set(cls.model_fields))
        if problems:
            raise ValueError("; ".join(problems))
        return data

    @model_validator(mode="after")
    def _cap_k(self) -> Settings:
        self.default_k = min(self.default_k, self.prompt_max_sources)
        return self

    @model_validator(mode="after")
    def _absolute_db(self) -> Settings:
        if self.mcp_command is None:        # a custom MCP command does not read `db`
            self.db = resolve_db(self.db, project_dir())
        return self

    # ---------------------------------------------------------------- derived views
    def mcp_argv(self) -> list[str]:
        return list(self.mcp_command) if self.mcp_command else default_command(self.db)

    def engine_spec(self) -> EngineSpec:
        return EngineSpec(name=self.engine, model=self.model, slots=self.engine_slots,
                          options=dict(self.engine_options))

    def wants_quote_vectors(self) -> bool:
        """Whether the Retriever fetches stored quote vectors: only for the engine that reads them."""
        return self.engine == "extractive" and self.engine_options.get("embedder", "minilm") != "none"

    def gate_rule(self) -> GateRule:
        """The Gate's settings as deployments.gate_rule.decide takes them."""
        return {"min_cosine": self.gate_min_cosine, "coverage_weight": self.gate_coverage_weight,
                "min_evidence": self.gate_min_evidence, "noise_margin": self.gate_noise_margin,
                "sentence_margin": self.gate_sentence_margin, "score_weights": self.gate_score_weights,
                "name_margin": self.gate_name_margin}

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(retries=self.first_token_retries, backoff_s=self.retry_backoff_s)

    def prompt_secret_bytes(self) -> bytes | None:
        return self.prompt_secret.get_secret_value().encode() if self.prompt_secret else None

    def prompt_limits(self) -> PromptLimits:
        return PromptLimits(self.prompt_max_sources, self.prompt_max_chars_per_source)

    def cost_usd(self, prompt_tokens: int, completion_tokens: int) -> float:
        return round(prompt_tokens / 1000 * self.cost_per_1k_prompt_tokens
                     + completion_tokens / 1000 * self.cost_per_1k_completion_tokens, 8)
