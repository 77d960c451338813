# The two commands a newcomer needs: `make run` and `make test`. Everything else is a step of those.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
DATA_DIR ?= ./data
HOST ?= 127.0.0.1
PORT ?= 8080
SAMPLE_ORGANIZATIONS ?= 40
SAMPLE_WORKSPACES ?= 20000
SAMPLE_DAYS ?= 7
export DATA_DIR HOST PORT

EXPLORER := npm run -s explorer --

.PHONY: install build run test test-deps cluster cluster-deps cluster-stop sample load apply sync clean bench bench-changes bench-sync bench-notify bench-stream bench-at-rest bench-disk bench-follower bench-designs bench-cluster bench-history bench-scale bench-load-phases bench-100m soak

# npm ci only when the lock file changed since the last install.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.installed

build: install
	npm run -s build

# The tests start their own redis-server (and Redis Clusters), HAProxy, and drive Debian's chromium
# (/usr/bin/chromium); openssl makes the private CA a sync over TLS is tested with. Each is installed from
# Debian's packages when missing, so that `make test` works on a fresh machine. REFLINK_DIR is a small XFS
# filesystem on a loop device (xfsprogs; mounting needs root), where the deltas are tested to be cloned
# rather than copied (test/service/cloned-deltas.test.ts); it stays mounted for the next run.
REFLINK_DIR ?= /var/tmp/explorer-reflink
export REFLINK_DIR
test-deps: cluster-deps
	@command -v openssl >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null; }
	@command -v redis-server >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@command -v mkfs.xfs >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq xfsprogs >/dev/null; }
	@mountpoint -q $(REFLINK_DIR) || { mkdir -p $(REFLINK_DIR) && truncate -s 512M $(REFLINK_DIR).img && \
	  mkfs.xfs -q -f -m reflink=1 $(REFLINK_DIR).img && mount -o loop $(REFLINK_DIR).img $(REFLINK_DIR); }

# The whole suite runs the server and the loader under a zone with a half-hour offset and daylight saving,
# and a locale other than English: an answer that depends on the host fails here, not in production.
# test/service/time-zones.test.ts adds loads and serves under other zones (UTC included) in child processes.
TEST_TZ ?= America/St_Johns
TEST_LOCALE ?= de_DE.UTF-8
# DuckDB's jemalloc keeps the pages it freed for 30 s rather than about one before it gives them back: on a
# machine where a page fault costs 12 µs and every return interrupts the process's other threads, the suite's
# files took a tenth less CPU (docs/development.md). What DuckDB answers does not depend on it; `explorer sync`'s
# own setting (src/duckdb/allocator.ts) is checked in a child without it (test/service/freed-memory.test.ts).
TEST_JE_MALLOC_CONF ?= dirty_decay_ms:30000,muzzy_decay_ms:30000
test: build test-deps
	TZ=$(TEST_TZ) LANG=$(TEST_LOCALE) DUCKDB_JE_MALLOC_CONF=$(TEST_JE_MALLOC_CONF) npx mocha

sample: build
	$(EXPLORER) sample $(DATA_DIR)/sample-source --organizations $(SAMPLE_ORGANIZATIONS) --workspaces $(SAMPLE_WORKSPACES) --days $(SAMPLE_DAYS)

load: build
	@test -n "$(SOURCE)" || { echo "usage: make load SOURCE=<dir>"; exit 2; }
	$(EXPLORER) load $(SOURCE)

# Loads a week of sample history when no snapshot exists, prints a fresh demo token and a curl line, then serves.
run: build
	@if [ ! -s "$(DATA_DIR)/snapshots/CURRENT" ]; then \
	  echo "No snapshot yet: generating and loading $(SAMPLE_DAYS) days of sample history ($(SAMPLE_WORKSPACES) workspaces)…"; \
	  $(EXPLORER) sample $(DATA_DIR)/sample-source --organizations $(SAMPLE_ORGANIZATIONS) --workspaces $(SAMPLE_WORKSPACES) --days $(SAMPLE_DAYS); \
	  $(EXPLORER) load-series $(DATA_DIR)/sample-source; \
	fi
	@token=$$($(EXPLORER) token create --organization acme-corp --description "make run" 2>/dev/null | tail -n 1); \
	echo; echo "Token for organization acme-corp: $$token"; echo "Try:"; \
	echo "  curl -s -H 'Authorization: Bearer $$token' 'http://$(HOST):$(PORT)/api/v2/organizations/acme-corp/explorer?type=providers&page%5Bsize%5D=5'"; \
	echo "Or open http://$(HOST):$(PORT)/explorer and paste the token."; echo
	@mkdir -p $(DATA_DIR)/spool/incoming
	@last=$$(ls -d $(DATA_DIR)/sample-source/day-* 2>/dev/null | tail -n 1 || true); \
	echo "Change batches: an ingest follower applies every batch directory renamed into $(DATA_DIR)/spool/incoming/"; \
	echo "(its log: $(DATA_DIR)/ingest.log). Try:"; \
	echo "  $(EXPLORER) sample-changes $${last:-<the loaded source>} $(DATA_DIR)/spool/new --batches 3 --workspaces 20"; \
	echo "  mv $(DATA_DIR)/spool/new/batch-0001 $(DATA_DIR)/spool/incoming/"; echo
	@echo "Notifications: saved views' notification configurations are sent by a notifier (its log: $(DATA_DIR)/notify.log)."; echo
	@node dist/src/cli/main.js ingest $(DATA_DIR)/spool >> $(DATA_DIR)/ingest.log 2>&1 & ingest=$$!; \
	node dist/src/cli/main.js notify >> $(DATA_DIR)/notify.log 2>&1 & notify=$$!; \
	trap 'kill $$ingest $$notify 2>/dev/null || true' EXIT; \
	UV_THREADPOOL_SIZE=$${UV_THREADPOOL_SIZE:-32} node dist/src/cli/main.js serve

# (All three are started as node itself, not through npm: the trap's kill then reaches the follower and the
# notifier when the server stops, and Ctrl-C ends the server's own way, with its last line and status 0, so
# that make has no failure to report. npm exits 1 when its child is interrupted.)

# HAProxy, Redis and curl from Debian's packages, for make cluster and its tests.
cluster-deps:
	@command -v haproxy >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 && command -v curl >/dev/null 2>&1 || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy redis-server curl >/dev/null; }

# Several instances behind HAProxy on one DATA_DIR, with a Redis Cluster of 3 primaries and 3 replicas, all
# on loopback (docs/deployment.md): CLUSTER_PORT (8080), CLUSTER_INSTANCES (3), CLUSTER_INSTANCE_PORT (8081),
# CLUSTER_REDIS_PORT (7001). Run again, it starts only what is not running. Pid files and logs: $(DATA_DIR)/cluster/.
cluster: build cluster-deps
	bash deploy/cluster.sh start

cluster-stop:
	bash deploy/cluster.sh stop

# Applies one change batch to the current snapshot (docs/changes.md): make apply BATCH=<dir>
apply: build
	@test -n "$(BATCH)" || { echo "usage: make apply BATCH=<batch directory>"; exit 2; }
	$(EXPLORER) apply $(BATCH)

# Mirrors organizations from a live Explorer API once (docs/sync.md); the token comes from the environment.
sync: build
	@test -n "$(FROM)" -a -n "$(ORGANIZATIONS)" || { echo "usage: make sync FROM=<url> ORGANIZATIONS=<name>[,<name>…]"; exit 2; }
	$(EXPLORER) sync --from $(FROM) --organization $(ORGANIZATIONS)

clean:
	rm -rf dist

# The performance scenarios (docs/performance.md): bench/run.ts on a 1,000,000-workspace snapshot (generated once
# under $(DATA_DIR)/bench), then the history and scale scripts. Not part of make test. BENCH_SKIP_LOAD=1 reuses
# the loaded snapshot; BENCH_SCENARIOS=A,C picks scenarios of bench/run.ts.
bench: build
	node dist/bench/run.js
	node dist/bench/changes.js
	node dist/bench/sync.js
	node dist/bench/notify.js
	node dist/bench/stream.js
	node dist/bench/cluster.js
	node dist/bench/history.js
	node dist/bench/scale.js

# The change-batch scenarios K1–K5 (docs/changes.md) on the bench snapshot; writes its batches once.
bench-changes: build
	node dist/bench/changes.js

# Y1–Y5 (docs/sync.md §5): `explorer sync` of the largest and a 500-workspace organization from another
# instance serving the bench snapshot: into an empty DATA_DIR, after 100 workspaces changed, unchanged.
bench-sync: build
	node dist/bench/sync.js

# N1–N4 (docs/notifications.md §9): 10,000 notification configurations over 1,000 organizations of the bench
# snapshot, a receiver, a server and `explorer notify`: batches of 10 and 1,000 workspaces, a load's pair.
bench-notify: build
	node dist/bench/notify.js

# The steady stream S1–S8 (docs/changes.md §6): a batch every 5 s for STREAM_MINUTES (20), under a fixed load
# (open loop, 60 % of capacity) and then a saturated one.
bench-stream: build
	node dist/bench/stream.js

# The stream's batches applied in steps with the server idle, each kind of page measured alone after each
# step: what layered organizations' pages cost as batches accumulate (bench/at-rest.ts).
bench-at-rest: build
	node dist/bench/at-rest.js

# What the data directory holds as the stream's batches are applied one at a time, by kind of file (bench/disk.ts).
bench-disk: build
	node dist/bench/disk.js

# F1–F2 (docs/performance.md, "Change batches: one thread", "What a follower costs a server's pages"): a
# batch's CPU on one DuckDB thread and on two, and what a server's page pays for batches applied beside it.
bench-follower: build
	node dist/bench/follower-cost.js

# M1–M6 (docs/performance.md, "Steady stream: the measurements that choose the layout"): in-process, on the
# bench snapshot's base, what a layout for a steady stream of batches would cost (bench/designs.ts).
bench-designs: build
	node dist/bench/designs.js

# B and E through HAProxy with 1, 2 and 3 instances on the bench snapshot, and an instance's failover
# (bench/cluster.ts, docs/deployment.md).
bench-cluster: build cluster-deps
	node dist/bench/cluster.js

# H alone: the small-organization page on 100k-, 1M- and 5M-workspace snapshots (bench/scale.ts).
bench-scale: build
	node dist/bench/scale.js

# The history scenarios alone: HISTORY_DAYS snapshots of a sample series (see bench/history.ts).
bench-history: build
	node dist/bench/history.js

# Where a load's time goes: each phase of loading the bench source, with wall time and CPU (bench/load-phases.ts).
bench-load-phases: build
	node dist/bench/load-phases.js

# A hundred million resources: a gzip source of 5M workspaces loaded, then the largest organization's
# R1 page against its 20M figure (bench/hundred-million.ts). Not part of make bench: ~65 GB of disk, 45-75 min.
# It compares with the newest R1 in bench/results: run make bench (or its R1) on the same machine first.
bench-100m: build
	node dist/bench/hundred-million.js

# Ten minutes of mixed load (pages, exports, saved-view writes) on loopback; fails on any 5xx, an RSS
# trend over 5 % after warm-up, or FIFOs left behind. SOAK_SECONDS overrides the length (the target: 1800).
soak: build
	node dist/bench/soak.js
