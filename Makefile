# zk-controller developer tasks (GNU make). `make help` lists the targets.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

# PYTHON only bootstraps .venv; everything else runs inside .venv.
PYTHON ?= python3
VENV ?= .venv
VENV_PYTHON := $(VENV)/bin/python
STAMP := $(VENV)/.stamp
EXTRAS ?= test,docker,spark
ZK_JAR ?= /usr/share/java/zookeeper.jar
# Debian's ZooKeeper 3.8 package; it depends on a Java runtime.
ZK_APT_PACKAGES ?= zookeeper
# Debian's Prometheus server and promtool (deploy/ checks and the real Prometheus test).
PROMETHEUS_APT_PACKAGES ?= prometheus
PYTEST_ARGS ?=
RUN_ARGS ?=
# What `make bench` runs (zk-controller bench ...); e.g. BENCH_ARGS='failover --partitions 1000000'.
BENCH_ARGS ?= all
# What `make chaos` runs (zk-controller chaos ...); the seed makes the fault schedule and the
# admin workload reproducible.
CHAOS_ARGS ?= --seed 1 --failovers 100
CHAOS_DIR ?= var/chaos

export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help setup zookeeper-deps prometheus-deps test lint bench chaos run run-controller proto kafka-json-vectors clean distclean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-15s %s\n", $$1, $$2}'
	@echo "  variables: ZK_CONNECT=host:port (use a running ZooKeeper), PYTEST_ARGS, RUN_ARGS"

setup: $(STAMP) ## create .venv and install the project with [$(EXTRAS)]

# Reinstall only when pyproject.toml changes. A .venv without pip (python3-venv missing when it
# was made) is recreated rather than trusted.
$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/pip || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); } || { \
	  echo "make setup: '$(PYTHON) -m venv' failed; on Debian/Ubuntu: apt-get install python3-venv" >&2; \
	  exit 1; }
	$(VENV)/bin/pip install -e '.[$(EXTRAS)]'
	touch $@

zookeeper-deps: ## make sure java and Debian's ZooKeeper jars are present (apt-get install if root)
	@have_java() { if [ -n "$${JAVA_HOME:-}" ] && [ -x "$$JAVA_HOME/bin/java" ]; then return 0; fi; \
	               command -v java >/dev/null 2>&1 && java -version >/dev/null 2>&1; }; \
	have_jar() { [ -n "$${ZOOKEEPER_CLASSPATH:-}" ] || [ -f "$(ZK_JAR)" ] \
	             || compgen -G '/usr/share/zookeeper/zookeeper*.jar' >/dev/null; }; \
	if have_java && have_jar; then echo "zookeeper-deps: java and ZooKeeper jars present"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=(); \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n); \
	else echo "zookeeper-deps: java and/or Debian's ZooKeeper jar ($(ZK_JAR)) are missing." >&2; \
	     echo "  Install them as root: apt-get update && apt-get install -y $(ZK_APT_PACKAGES)" >&2; \
	     echo "  (the zookeeper package pulls in a Java runtime), or set ZK_CONNECT=host:port" >&2; \
	     echo "  to use an existing ZooKeeper (failover tests still need java + the jars)." >&2; \
	     exit 1; fi; \
	command -v apt-get >/dev/null 2>&1 || { echo "zookeeper-deps: no apt-get; install a JRE and ZooKeeper 3.8 jars, then set ZOOKEEPER_CLASSPATH" >&2; exit 1; }; \
	echo "zookeeper-deps: installing $(ZK_APT_PACKAGES) with apt-get"; \
	"$${sudo[@]}" apt-get update; \
	"$${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(ZK_APT_PACKAGES); \
	have_java && have_jar || { echo "zookeeper-deps: still no java or $(ZK_JAR) after install" >&2; exit 1; }

prometheus-deps: ## make sure Debian's prometheus and promtool are present (apt-get install if root)
	@if command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; then \
	  echo "prometheus-deps: prometheus and promtool present"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=(); \
	elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n); \
	else echo "prometheus-deps: prometheus and/or promtool are missing." >&2; \
	     echo "  Install them as root: apt-get update && apt-get install -y $(PROMETHEUS_APT_PACKAGES)" >&2; \
	     exit 1; fi; \
	command -v apt-get >/dev/null 2>&1 || { echo "prometheus-deps: no apt-get; install Prometheus 2.x (prometheus and promtool on PATH)" >&2; exit 1; }; \
	echo "prometheus-deps: installing $(PROMETHEUS_APT_PACKAGES) with apt-get"; \
	"$${sudo[@]}" apt-get update; \
	"$${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(PROMETHEUS_APT_PACKAGES); \
	command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 || { echo "prometheus-deps: still no prometheus/promtool after install" >&2; exit 1; }

test: setup zookeeper-deps prometheus-deps ## ruff and mypy, then the whole pytest suite (needs ZooKeeper; CI=true fails instead of skipping)
	$(VENV)/bin/ruff check controller tests
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# The controller benchmark suite: a local ZooKeeper, simulated brokers and the controller, every
# scenario at several sizes (docs/performance.md). Takes tens of minutes; watch `uptime`.
bench: setup zookeeper-deps ## benchmark suite, table on stdout (BENCH_ARGS, default: all)
	$(VENV)/bin/zk-controller bench $(BENCH_ARGS)

# The long chaos run (docs/reliability.md, ## Chaos): a 3-node ensemble, 3 controllers and 5
# reference brokers on 127.0.0.1, faults until 100 controller failovers, invariants checked
# live and over ZooKeeper's transaction logs. Takes 20-40 minutes; the short run is in `make test`.
chaos: setup zookeeper-deps ## long chaos run: >= 100 failovers, 0 violations (CHAOS_ARGS)
	rm -rf $(CHAOS_DIR)
	$(VENV)/bin/zk-controller chaos --work-dir $(CHAOS_DIR) $(CHAOS_ARGS)

lint: setup ## ruff check and mypy (its settings: pyproject.toml)
	$(VENV)/bin/ruff check controller tests
	$(VENV)/bin/mypy

# The local stack: an embedded ZooKeeper (unless ZK_CONNECT is set), the controller and three
# reference brokers with a demo topic, in the foreground; Ctrl-C stops everything.
run: setup $(if $(ZK_CONNECT),,zookeeper-deps) ## run the local stack (ZooKeeper, controller, 3 brokers, demo topic)
	$(VENV)/bin/zk-controller stack $(if $(ZK_CONNECT),--zookeeper $(ZK_CONNECT)) $(RUN_ARGS)

# Just the controller daemon (against ZK_CONNECT, else an embedded ZooKeeper).
run-controller: setup $(if $(ZK_CONNECT),,zookeeper-deps) ## run only controller 0 in the foreground
	$(VENV)/bin/zk-controller run --controller-id 0 $(if $(ZK_CONNECT),--zookeeper $(ZK_CONNECT),--embedded-zookeeper) $(RUN_ARGS)

proto: setup ## regenerate the gRPC code from proto/
	@if $(VENV_PYTHON) -c 'import importlib.util as u, sys; sys.exit(u.find_spec("controller.api.codegen") is None)' 2>/dev/null; then \
	  $(VENV_PYTHON) -m controller.api.codegen; \
	else echo "make proto: controller/api/codegen.py does not exist yet, so there is nothing to run" >&2; exit 1; fi

KAFKA_JSON_DIR := tests/unit/kafka_json
SPARK_JARS = $(shell $(VENV_PYTHON) -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
kafka-json-vectors: setup ## regenerate Kafka's znode bytes for tests/unit/test_kafka_json_bytes.py (needs a JDK)
	@jars='$(SPARK_JARS)'; cp=$$(ls "$$jars"/scala-library-2.13*.jar "$$jars"/jackson-core-2.*.jar \
	  "$$jars"/jackson-databind-2.*.jar "$$jars"/jackson-annotations-2.*.jar | paste -sd: -); \
	out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	javac -d "$$out" -cp "$$cp" $(KAFKA_JSON_DIR)/KafkaJsonVectors.java; \
	java -cp "$$cp:$$out" KafkaJsonVectors > $(KAFKA_JSON_DIR)/vectors.jsonl; \
	echo "wrote $$(wc -l < $(KAFKA_JSON_DIR)/vectors.jsonl) vectors to $(KAFKA_JSON_DIR)/vectors.jsonl"

clean: ## remove caches and build output (keeps .venv)
	rm -rf .pytest_cache .ruff_cache .mypy_cache .hypothesis build dist *.egg-info
	find controller tests -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean ## also remove .venv
	rm -rf $(VENV)
