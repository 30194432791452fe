# rebalance-monitor — one command per task. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
JARS := .cache/jars
MVN := mvn -B -q -s jvm/settings.xml
LOCALFS_JAR := $(JARS)/localfs/rebalance-monitor-localfs.jar
UDF_JAR := $(JARS)/udf/rebalance-monitor-udf.jar

.PHONY: help setup test-tools jars test test-unit test-oracle chaos check schema fmt bench bench-stream bench-steady bench-live bench-soak bench-audit demo clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: $(VENV)/.installed jars ## create .venv, install the package with dev extras, resolve the JVM jars

test-tools: prometheus-bin dashboard-linter openssl-bin ## what only the tests need: Prometheus + promtool, the dashboard linter, openssl

$(VENV)/.installed: pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

jars: $(JARS)/oracle/.resolved $(JARS)/broker/.resolved $(JARS)/clients/.resolved $(JARS)/spark/.resolved $(LOCALFS_JAR) $(UDF_JAR) ## resolve the Maven jars into .cache/jars (fast when warm)

$(JARS)/%/.resolved: jvm/%/pom.xml
	@echo "resolving $* jars with mvn into $(JARS)/$*"
	@rm -rf $(JARS)/$* && mkdir -p $(JARS)/$*
	@$(MVN) -f $< dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(JARS)/$*
	@touch $@

# Spark's extra jars (Kafka source, Delta) minus what the pyspark wheel already ships.
# (order-only on the venv: prune needs the pyspark wheel, not a re-resolve on every pyproject edit)
$(JARS)/spark/.resolved: jvm/spark/pom.xml jvm/prune_spark_jars.py | $(VENV)/.installed
	@echo "resolving spark jars with mvn into $(JARS)/spark"
	@rm -rf $(JARS)/spark && mkdir -p $(JARS)/spark
	@$(MVN) -f $< dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/$(JARS)/spark
	@$(BIN)/python jvm/prune_spark_jars.py $(JARS)/spark
	@touch $@

# Small JVM classes compiled with javac against the jars the pyspark wheel ships:
# jvm/localfs, Hadoop's local file system without a process per file (see
# streaming/spark/session.py); jvm/udf, the commit lane's decoder (see streaming/spark/commits.py).
define javac_jar
	@echo "building $@ with javac"
	@set -e; out=$(@D); rm -rf $$out && mkdir -p $$out/classes; \
	  jars=$$($(BIN)/python -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "jars")'); \
	  javac -nowarn --release 17 -d $$out/classes -cp "$$jars/*" $^; \
	  jar cf $@ -C $$out/classes .; rm -rf $$out/classes
endef

$(LOCALFS_JAR): $(wildcard jvm/localfs/src/rebalancemonitor/hadoop/*.java) | $(VENV)/.installed
	$(javac_jar)

$(UDF_JAR): $(wildcard jvm/udf/src/rebalancemonitor/spark/*.java) | $(VENV)/.installed
	$(javac_jar)

# Prometheus server and promtool (rule checks, promtool unit tests, tests/dashboards): Debian's
# package, installed only when missing. Its postinst may start a service on :9090 (not under
# Docker's policy-rc.d, nor without an init system): stop and disable it, the tests start
# their own server on a free port.
.PHONY: prometheus-bin dashboard-linter openssl-bin
# The openssl command makes the tests' certificates (tests/tls.py: the exporter's TLS and
# client CA); Debian's package, installed only when missing.
openssl-bin: ## install Debian's openssl command if missing
	@if ! command -v openssl >/dev/null; then \
	  sudo=""; if [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null; then sudo=sudo; fi; \
	  echo "installing Debian's openssl with apt-get"; \
	  install="$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openssl"; \
	  $$install || { $$sudo apt-get update -q && $$install; } || exit 1; \
	fi

prometheus-bin: ## install Debian's prometheus and promtool if missing (no service left running)
	@if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then \
	  sudo=""; if [ "$$(id -u)" != 0 ] && command -v sudo >/dev/null; then sudo=sudo; fi; \
	  echo "installing Debian's prometheus (server and promtool) with apt-get"; \
	  install="$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus"; \
	  $$install || { $$sudo apt-get update -q && $$install; } || exit 1; \
	  if [ -d /run/systemd/system ]; then $$sudo systemctl disable --now prometheus.service || true; \
	  elif [ -x /etc/init.d/prometheus ]; then \
	    $$sudo /etc/init.d/prometheus stop >/dev/null || true; \
	    $$sudo update-rc.d prometheus disable >/dev/null 2>&1 || true; \
	  fi; \
	fi

# grafana/dashboard-linter, built from source with the machine's Go: `go install` refuses it
# (its go.mod has a replace directive), and the module proxy serves v0.2.0 but not the
# grafana/apps/dashboard pseudo-version its v2-schema reader needs, so lint/v2.go is replaced
# by dashboards/linter/v2_stub.go (our dashboards use the classic schema).
GO ?= $(or $(shell command -v go),/usr/local/go/bin/go)
DASHBOARD_LINTER_VERSION := v0.2.0
DASHBOARD_LINTER := .cache/bin/dashboard-linter
GO_ENV := GOTOOLCHAIN=local GOFLAGS=-modcacherw
GO_BUILD_ENV := GOTOOLCHAIN=local GOFLAGS="-modcacherw -mod=mod"

dashboard-linter: $(DASHBOARD_LINTER) ## build grafana/dashboard-linter into .cache/bin

$(DASHBOARD_LINTER): dashboards/linter/v2_stub.go
	@echo "building grafana/dashboard-linter $(DASHBOARD_LINTER_VERSION) with $(GO) into $@"
	@set -e; src=.cache/src/dashboard-linter; rm -rf $$src; mkdir -p .cache/src $(@D); \
	  mod=github.com/grafana/dashboard-linter@$(DASHBOARD_LINTER_VERSION); \
	  (cd .cache/src && $(GO_ENV) $(GO) mod download $$mod); \
	  cp -r "$$($(GO_ENV) $(GO) env GOMODCACHE)/$$mod" $$src; chmod -R u+w $$src; \
	  cp $< $$src/lint/v2.go; \
	  cd $$src; $(GO_ENV) $(GO) mod edit -droprequire github.com/grafana/grafana/apps/dashboard; \
	  $(GO_BUILD_ENV) $(GO) build -trimpath -o $(CURDIR)/$@ .

test: setup test-tools ## run every test tier (unit, oracle, broker, Spark, Prometheus, ...)
	$(BIN)/pytest

test-unit: setup ## only the fast unit tier
	$(BIN)/pytest -m unit

test-oracle: setup ## only the differential against Kafka's Java assignors (the oracle tier)
	$(BIN)/pytest -m oracle

# The chaos test's long version (tests/spark/test_restart.py; make test runs a short one):
# KILLS SIGKILLs at random points (inside the Delta appends too), SEED to replay a plan.
KILLS ?= 24
SEED ?= random
chaos: setup ## SIGKILL the job KILLS times (24) at random points, restart it, compare its tables (SEED=N replays)
	CHAOS_KILLS=$(KILLS) CHAOS_SEED=$(SEED) CHAOS_MAX_OFFSETS=$(or $(MAX_OFFSETS),25) \
	  $(BIN)/pytest tests/spark/test_restart.py -s

# Only the venv (the tools pinned in the dev extras, the packages mypy reads): no jars.
check: $(VENV)/.installed ## ruff, ruff-format and mypy --strict on assign_core, streaming and bench
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

schema: setup ## regenerate streaming/schemas/membership_event_v{1,2}.json from the event model
	$(BIN)/python -m streaming.membership_event --write

fmt: setup ## format the code
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: setup ## Python vs Java assignor benchmark (bench/assignors.py)
	$(BIN)/python bench/assignors.py

bench-stream: setup ## the streaming job vs a kafka-python read+decode loop (bench/stream.py)
	$(BIN)/python bench/stream.py $(ARGS)

bench-steady: setup ## the job vs Burrow, KMinion and the loop on a steady commit backlog in the real __consumer_offsets (bench/steady.py)
	$(BIN)/python bench/steady.py $(ARGS)

bench-audit: setup ## every audit subcommand timed over a month of 10,000 groups, built once into .cache/bench (bench/audit.py)
	$(BIN)/python -m bench.audit $(ARGS)

bench-live: setup ## detection latency while the job consumes the steady workload live at its real rate (bench/live.py)
	$(BIN)/python bench/live.py $(ARGS)

bench-soak: setup ## the live workload with the collector for an hour: growth of tables, checkpoint, memory, batch time (bench/soak.py)
	$(BIN)/python bench/soak.py $(ARGS)

demo: setup ## everything live: local broker, simulated groups, collector, the job, metrics (Ctrl-C stops)
	$(BIN)/rebalance-monitor demo $(ARGS)

clean: ## remove the venv, caches and local state
	rm -rf $(VENV) .cache .local .pytest_cache .mypy_cache .ruff_cache
