# mcp-code-runner: `make run` sets everything up and serves; `make test` runs
# every test against the real Docker daemon and real MCP clients.

BIN      := bin/mcp-code-runner
ADDR     ?= 127.0.0.1:8080
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GOFLAGS_BUILD := -ldflags "-s -w -X main.version=$(VERSION)"

# Every build, test and lint here but the race detector's uses one
# configuration, what ships (static, -trimpath), so that they share Go's
# build cache: the server's build, the test binaries and lint's type checks
# compile each package once (a cold cache compiled the dependencies twice).
export CGO_ENABLED := 0
export GOFLAGS := -buildvcs=false -trimpath

IMAGE    ?= mcp-code-runner:latest

.PHONY: all build cross image docker gvisor images images-all images-ml checkpoint-tools run serve-stdio test test-fast test-fast-binaries test-go test-e2e test-conformance test-engines \
	test-binaries test-go-packages test-go-batteries test-e2e-run test-conformance-run test-engines-run e2e-deps fuzz bench lint clean \
	k8s-build k8s-up k8s-images k8s-down test-k8s bench-k8s k8s-deploy-check

all: build

# Both binaries are static (CGO_ENABLED=0): the agent beside the server is
# mounted into every sandbox, whose images need not share the host's C
# library. (The server binary is an agent too, as a fallback, but a larger
# one: each sandbox would pay its start and memory.)
build:
	go build $(GOFLAGS_BUILD) -o $(BIN) ./cmd/mcp-code-runner
	go build $(GOFLAGS_BUILD) -o $(BIN)-agent ./cmd/mcp-code-runner-agent

# The server for the desktop platforms (macOS on Apple Silicon and Intel,
# Windows), where Docker Desktop runs the sandboxes in a Linux VM: they run
# the Linux agent (see `mcp-code-runner setup`). CI checks that they build
# (.ci/run, beside the images: make cross CROSS_CHECK=1, for macOS on Apple
# Silicon and Windows, compiled without optimizations, which takes half the
# CPU; what it proves is that the code compiles and links for them).
CROSS_TARGETS := darwin/arm64 darwin/amd64 windows/amd64
CROSS_CHECK_TARGETS := darwin/arm64 windows/amd64
cross:
	@set -e; for t in $(if $(CROSS_CHECK),$(CROSS_CHECK_TARGETS),$(CROSS_TARGETS)); do \
	  os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "cross: $$os/$$arch -> bin/cross/mcp-code-runner-$$os-$$arch$$ext"; \
	  GOOS=$$os GOARCH=$$arch go build $(if $(CROSS_CHECK),-gcflags=all='-N -l') $(GOFLAGS_BUILD) -o bin/cross/mcp-code-runner-$$os-$$arch$$ext ./cmd/mcp-code-runner; \
	done

# The server as a container image (Dockerfile; run it with docker-compose.yml).
image: build docker
	bash scripts/build-image.sh $(BIN) $(IMAGE)

# Install (if missing) and start the Docker daemon.
docker:
	@bash scripts/ensure-docker.sh

# gVisor's runsc, built from the Go module proxy at the pinned version,
# in /var/lib/mcp-code-runner/gvisor (the runtime of isolation gvisor), and
# registered with Docker as runsc (scripts/ensure-gvisor.sh). Root only.
gvisor: docker
	@bash scripts/ensure-gvisor.sh

# Build the default runtime images that are missing or out of date: what
# `make run` serves with. The on-demand images (dialects, jsruntimes, swift,
# objc, extras) are left out: `make images-all` builds them too, as
# `make test` and CI do.
images: build docker
	$(BIN) images build

# Every runtime image but the optional python-ml: the default set and the
# on-demand images.
images-all: build docker
	$(BIN) images build --all

# The optional python-ml image (PyTorch and XGBoost, several GB): never built
# by `make images`; docs/LANGUAGES.md says how python runs in it.
images-ml: build docker
	$(BIN) images build python-ml

# The checkpoint tools (Debian trixie's crun and criu) in
# /var/lib/mcp-code-runner/checkpoint-tools: with them the crun backend
# checkpoints paused sessions' sandboxes and restores them exactly (see
# scripts/checkpoint-tools.sh and docs/OPERATORS.md). Root only.
checkpoint-tools: build docker
	BIN=$(BIN) bash scripts/checkpoint-tools.sh

# Set up everything and serve Streamable HTTP on $(ADDR). Only the images of
# the first languages (python, javascript, typescript, bash) are built before
# serving, so that a fresh machine serves in minutes; the server builds the
# rest of the default set itself (images.build_on_start), one image at a time
# at a low CPU priority so that runs keep CPU to spare, its log in
# $(RUN_BUILD_LOG). list_languages shows each language's image as building,
# queued or failed until it is available, and a run in one of them waits for
# its image. The background build stops with the server.
FIRST_LANGUAGES ?= python javascript typescript bash
RUN_BUILD_LOG   ?= bin/images-build.log
RUN_GVISOR_LOG  ?= bin/gvisor-install.log
run: docker
	@set -e; t0=$$(date +%s); \
	$(MAKE) --no-print-directory build; t1=$$(date +%s); \
	$(BIN) images build $(FIRST_LANGUAGES); t2=$$(date +%s); \
	echo "run: binary built in $$((t1-t0))s, images of $(FIRST_LANGUAGES) in $$((t2-t1))s"; \
	echo "run: the server builds the other default images in the background; their log: $(RUN_BUILD_LOG)"; \
	$(BIN) client-config --http $(ADDR); \
	( for i in $$(seq 600); do \
	    if curl -fsS -o /dev/null http://$(ADDR)/readyz 2>/dev/null; then \
	      echo "run: ready on http://$(ADDR)/mcp $$(( $$(date +%s) - t0 ))s after start"; \
	      echo "run: gVisor (isolation gvisor) installs in the background; its log: $(RUN_GVISOR_LOG)"; \
	      nice bash scripts/ensure-gvisor.sh >$(RUN_GVISOR_LOG) 2>&1; exit 0; fi; \
	    sleep 1; done ) & rd=$$!; \
	trap 'kill $$rd 2>/dev/null || true' EXIT INT TERM; \
	$(BIN) serve --http $(ADDR) --images-build-on-start --images-build-log $(RUN_BUILD_LOG)

# Serve on stdio (what desktop MCP clients launch).
serve-stdio: build
	$(BIN) serve

# Every test: the fast tier, Go unit and Docker tests, then real MCP clients
# end to end. The language tests cover every language, so every image but
# python-ml is built first. After the fast tier the Docker-heavy parts run in
# two lanes side by side (scripts/lanes.sh says why that is safe and what it
# gains): the Go packages and Podman in one; the hostile batteries, the
# language matrices, the e2e clients, the conformance suites and the
# rootless engines in the other (about 24 minutes each from scratch in CI,
# where the first had been 4 minutes longer with the rootless engines in
# it). Each lane runs all its parts even when one fails. FAST_TIER=passed leaves the fast tier
# out (CI runs it apart, after the tests).
test: images-all checkpoint-tools gvisor e2e-deps
	@rc=0; \
	$(if $(filter passed,$(FAST_TIER)),echo "make test: the fast tier runs apart (FAST_TIER=passed)";,$(MAKE) --no-print-directory test-fast || rc=1;) \
	$(MAKE) --no-print-directory test-binaries || rc=1; \
	bash scripts/lanes.sh \
	  packages "$(MAKE) --no-print-directory test-go-packages; $(MAKE) --no-print-directory test-engines-run ENGINES=podman" \
	  batteries "$(MAKE) --no-print-directory test-go-batteries; $(MAKE) --no-print-directory test-e2e-run; $(MAKE) --no-print-directory test-conformance-run; $(MAKE) --no-print-directory test-engines-run ENGINES=rootless" || rc=1; \
	bash scripts/check-leftovers.sh $$(test -f $(K8S_STATE)/admin.kubeconfig && echo '$(K8S_KUBECTL)') || rc=1; \
	if [ $$rc -ne 0 ]; then echo "make test: FAILED (see the parts above)"; fi; \
	exit $$rc

# The e2e clients' packages (npm ci), installed again only when the lock
# file changed: the lanes of make test run node from them side by side, so
# nothing reinstalls them during a run.
e2e-deps: e2e/node_modules/.package-lock.json
e2e/node_modules/.package-lock.json: e2e/package-lock.json
	cd e2e && npm ci --no-audit --no-fund --loglevel=error

# The whole battery, run again with its programs in sandboxes restored from
# a checkpoint (internal/containment/restored_test.go; about 3 minutes),
# but for the tests that never run a program in a session's sandbox
# (docs/SECURITY.md, Sessions, says why for each).
RESTORED_BATTERY_SKIP := ^(TestPoolCloseRemovesEverySandbox|TestOverload)$$

# Under gVisor (isolation gvisor) the language matrix runs for one language
# of each kind of runtime (an interpreter, node, the JVM, compiled Go and
# C), on the Docker backend under the daemon's runsc (all 55 languages
# passed there, docs/SECURITY.md#gvisor), and the whole hostile battery
# runs on the default backend (internal/containment with
# MCR_TEST_ISOLATION=gvisor; docs/SECURITY.md, gVisor, says what each test
# proves there).
GVISOR_MATRIX_LANGUAGES = bash|python|javascript|java|go|c

# The fast tier: no Docker, with the race detector. Tests that need Docker
# carry //go:build !fast; the logic tests run on the in-process fake backend.
# Its tests mostly wait on processes and timers, so 4 packages run at once.
test-fast:
	CGO_ENABLED=1 go test -race -tags fast -count=1 -p 4 -timeout 15m ./...

# The fast tier's packages compiled (not linked or run) into the build cache,
# so that CI compiles them at a low priority while the images build.
test-fast-binaries:
	CGO_ENABLED=1 go list -race -tags fast -test -export -deps ./... >/dev/null

# test-go runs two lanes side by side (scripts/lanes.sh): the Go packages,
# one at a time (-p 1: the Docker and cluster suites each load both cores),
# and the batteries and language matrices one after another. The battery's
# CPU checks are upper bounds (a sandbox uses no more than its quota), which
# a busy neighbour cannot break; its heap and leftover checks are its own
# process's.
# Sandboxes run under crun where the daemon has it (runtime "auto"), but for
# the hostile battery, which runs on the docker backend under runc (Docker's
# own default runtime), whole: crun's enforcement of the same hardening is
# proven by the battery on the default backend, which drives crun itself.
# The language matrix runs under runc too, for one language of each image
# (what a runtime changes is the container, which every language of an image
# shares), so that both runtimes are proven on every change without running
# 55 languages twice. The battery and the egress battery run on the default
# backend (what serve runs with no backend set: crun, which starts the
# containers itself, on these machines, which run as root with crun; under
# CI=true a default of docker fails).
RUNC_MATRIX_LANGUAGES = bash|python|javascript|ruby|go|c|java|csharp|r|haskell|octave|deno|swift|objective-c|jq
test-go: build e2e-deps test-binaries
	bash scripts/lanes.sh packages "$(MAKE) --no-print-directory test-go-packages" batteries "$(MAKE) --no-print-directory test-go-batteries"

# The test packages compiled, both cores at once (the lanes' -p 1 would
# compile them one at a time), into the build cache: compiled only (go list
# -export), as lint's type checks want them; each lane links its own.
test-binaries:
	go list -test -export -deps ./... >/dev/null

# test-go's two lanes; they use the binaries built (make build) before them.
# The packages that use the test cluster run last, so that under CI, which
# starts the cluster beside the first tests, they find it up (K8S_TEST_ENV
# waits for it there); each part runs even when the other failed.
K8S_TEST_PACKAGES = ./internal/e2e/ ./internal/sandbox/kubernetes/
test-go-packages:
	@rc=0; \
	MCR_TEST_BINARY=$(CURDIR)/$(BIN) go test -p 1 -count=1 -timeout 45m $$(go list ./... | grep -v -e '/internal/containment$$' -e '/internal/e2e$$' -e '/internal/sandbox/kubernetes$$') || rc=1; \
	$(K8S_TEST_ENV) MCR_TEST_BINARY=$(CURDIR)/$(BIN) go test -p 1 -count=1 -timeout 45m $(K8S_TEST_PACKAGES) || rc=1; \
	exit $$rc
test-go-batteries:
	MCR_TEST_RUNTIME=runc go test -count=1 -timeout 30m ./internal/containment/
	MCR_TEST_BACKEND=default go test -p 1 -count=1 -timeout 30m ./internal/containment/ ./internal/egress/
	MCR_TEST_BACKEND=default MCR_TEST_RESTORED=1 go test -count=1 -timeout 30m -skip '$(RESTORED_BATTERY_SKIP)' ./internal/containment/
	MCR_TEST_BACKEND=default MCR_TEST_ISOLATION=gvisor go test -count=1 -timeout 30m ./internal/containment/
	MCR_TEST_ISOLATION=gvisor go test -count=1 -timeout 30m -run 'TestLanguagesAgainstDocker/^($(GVISOR_MATRIX_LANGUAGES))$$' ./internal/engine/
	MCR_TEST_RUNTIME=runc go test -count=1 -timeout 30m -run 'TestLanguagesAgainstDocker/^($(RUNC_MATRIX_LANGUAGES))$$' ./internal/engine/

test-e2e: build e2e-deps
	$(MAKE) --no-print-directory test-e2e-run
test-e2e-run:
	cd e2e && MCR_BINARY=$(CURDIR)/$(BIN) node --test --test-concurrency=1 --test-timeout=600000 --test-reporter=spec tests/

# The engines beside rootful Docker: Podman, rootless Docker and rootless
# Podman, started and given the bash, python and node images by
# scripts/ensure-engines.sh (as root; CI does it after the images build).
# ENGINES=podman or ENGINES=rootless runs one part (make test puts them in
# different lanes); empty, both. See scripts/test-engines.sh.
test-engines: build e2e-deps
	$(MAKE) --no-print-directory test-engines-run
test-engines-run:
	MCR_BINARY=$(BIN) bash scripts/test-engines.sh $(ENGINES)

# Both suites against the conformance fixture server (the suite's fixtures on
# the product's HTTP handler, internal/conformance) and against the product.
test-conformance: build
	$(MAKE) --no-print-directory test-conformance-run
test-conformance-run:
	CGO_ENABLED=0 go build -o bin/conformance-fixture ./internal/conformance/fixtureserver
	MCR_BINARY=$(CURDIR)/$(BIN) MCR_FIXTURE_BINARY=$(CURDIR)/bin/conformance-fixture bash scripts/conformance.sh

# A real single-node Kubernetes on this machine for the kubernetes backend
# (scripts/k8s/: etcd, kube-apiserver, kube-scheduler and kubelet built from
# the Go module proxy, containerd and runc from Debian). k8s-up starts it and
# puts the agent image and the runtime images the tests use into its
# containerd; k8s-down stops exactly what k8s-up started.
K8S_STATE       ?= /var/lib/mcp-code-runner/k8s
K8S_TEST_IMAGES ?= mcp-code-runner/python:2 mcp-code-runner/base:1

k8s-build:
	bash scripts/k8s/build.sh

k8s-up: build
	bash scripts/k8s/up.sh
	$(MAKE) k8s-images

k8s-images: build
	bash scripts/k8s/images.sh agent $(BIN)-agent > $(K8S_STATE)/agent-image
	bash scripts/k8s/images.sh import $(K8S_TEST_IMAGES)

k8s-down:
	bash scripts/k8s/down.sh

# The test cluster's kubeconfig and agent image for the tests, read when the
# command runs (under CI the cluster may still be starting when make test
# does: scripts/k8s/test-env.sh then waits for it); without them its tests
# skip (and fail under CI=true).
K8S_TEST_ENV = env $$(MCR_K8S_STATE=$(K8S_STATE) bash scripts/k8s/test-env.sh)
K8S_KUBECTL  = /var/cache/mcp-code-runner/k8s/bin/kubectl --kubeconfig $(K8S_STATE)/admin.kubeconfig

# run_code on the kubernetes backend beside Docker, cold and warm, in one run,
# on the test cluster (make k8s-up), in a namespace of its own. Each sandbox
# gets a quarter core on both backends, so that the pools and the cold runs
# fit on one 2-core node (a pod requests what it is limited to).
K8S_BENCH_NS ?= mcp-code-runner-bench
bench-k8s: build
	$(K8S_KUBECTL) get namespace $(K8S_BENCH_NS) >/dev/null 2>&1 || $(K8S_KUBECTL) create namespace $(K8S_BENCH_NS)
	$(K8S_KUBECTL) label --overwrite namespace $(K8S_BENCH_NS) pod-security.kubernetes.io/enforce=restricted >/dev/null
	$(K8S_KUBECTL) -n $(K8S_BENCH_NS) get serviceaccount default >/dev/null 2>&1 || $(K8S_KUBECTL) -n $(K8S_BENCH_NS) create serviceaccount default
	$(BIN) bench --log-level error --backends docker,kubernetes --languages python,bash --runs 50 --cold-runs 20 --cpus 0.25 --bench-pool-size 1 --churn-for 0 --load-for 0 \
	  --kubernetes-kubeconfig $(K8S_STATE)/admin.kubeconfig --kubernetes-namespace $(K8S_BENCH_NS) \
	  --kubernetes-agent-image $$(cat $(K8S_STATE)/agent-image) --kubernetes-image-pull-policy Never

# The server deployed from deploy/kubernetes onto the test cluster runs code
# (with WITH_KCM=1 make k8s-up the Deployment itself makes its pod).
k8s-deploy-check: image
	bash scripts/k8s/deploy-check.sh

# Only the kubernetes backend's tests (make test runs them too).
test-k8s: build
	$(K8S_TEST_ENV) MCR_TEST_BINARY=$(CURDIR)/$(BIN) go test -count=1 -timeout 15m -run 'Cluster|Kubernetes' ./internal/sandbox/kubernetes/ ./internal/e2e/

# Fuzz each target for FUZZTIME (seed corpora live in testdata/fuzz).
FUZZTIME ?= 30s
fuzz:
	go test -run XXX -fuzz FuzzDecodeRequest -fuzztime $(FUZZTIME) ./internal/engine
	go test -run XXX -fuzz FuzzReadFrame -fuzztime $(FUZZTIME) ./internal/wire
	go test -run XXX -fuzz FuzzValidPath -fuzztime $(FUZZTIME) ./internal/wire

# gofmt, go vet, go mod tidy -diff and golangci-lint (.golangci.yml).
lint:
	bash scripts/lint.sh

# Cold vs warm vs bare-process latency, churn ceiling, sustained load, memory.
# The full bench on the Docker backend, then the default backend (what
# serve chooses with no backend set: crun where it can serve) and the Docker
# backend side by side (latency, churn, cold runs and the sustained load),
# then the isolations on the default backend: containers and gVisor side by
# side (the same, and the memory of idle warm sandboxes). Last, code mode:
# 20 tool calls to the filesystem MCP server (e2e's pinned one) straight from
# a client against one run_code making them from the sandbox.
# Python sessions make bench creates, pauses and resumes on one host
# (bench --many-sessions); the issue's figure is 1000.
BENCH_SESSIONS ?= 100

bench: images gvisor
	$(BIN) bench --log-level error --backend docker --many-sessions $(BENCH_SESSIONS)
	$(BIN) bench --log-level error --backends docker,default --languages python,javascript --runs 50 --cold-runs 20
	$(BIN) bench --log-level error --isolations container,gvisor --languages python,javascript,bash --runs 50 --cold-runs 15
	test -d e2e/node_modules/@modelcontextprotocol/server-filesystem || (cd e2e && npm ci --no-audit --no-fund --loglevel=error)
	$(BIN) bench --log-level error --backend docker --runs 20 --code-mode-server "node e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"

clean:
	rm -rf bin
