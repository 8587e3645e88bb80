# workspacemounts: `make run` starts a local kcp with the plugin and a demo;
# `make test` runs the unit and the end-to-end tests (against a real kcp that
# this Makefile builds from the module proxy, see hack/kcp).

SHELL := /usr/bin/env bash -o pipefail

GO ?= go
BIN := $(abspath bin)
# The kcp the tests, the benchmarks and make run start: v0.28.1 built from the
# module proxy (hack/kcp) unless one of these names another release's:
#   KCP_BIN, KCP_CACHE_SERVER_BIN, KCP_FRONT_PROXY_BIN, KCP_MOUNTS_TEST_BIN:
#     its binaries (kcp, cache-server, kcp-front-proxy, and kcp's own mounts
#     e2e test compiled, go test -c -trimpath ./test/e2e/mounts), used as
#     they are (kcp v0.31 and later: set KCP_REPO_DIR to the source tree of
#     KCP_MOUNTS_TEST_BIN, where kcp's test helpers find their files);
#   KCP_SOURCE (and KCP_SOURCE_VERSION, its tag): a kcp source tree, from
#     which make kcp builds them into _output/kcp-<tag> (hack/kcp-source);
#     KCP_REPO_DIR is set to it.
#   KCP_VERSION: a release the module proxy serves whole (with its staging
#     modules: none after v0.30 yet), made a source tree of under
#     _output/kcp-<tag>/src (hack/kcp-source/from-proxy.sh) and built as
#     KCP_SOURCE is; the one step to test another release: KCP_VERSION=v0.34.0 make test.
# e.g. make test-e2e KCP_SOURCE=_output/kcp-v0.32.3/src KCP_SOURCE_VERSION=v0.32.3
KCP_VERSION ?=
KCP_SOURCE ?=
KCP_SOURCE_VERSION ?=
KCP_BIN ?=
ifneq ($(filter-out v0.28.1,$(KCP_VERSION)),)
KCP_SOURCE := _output/kcp-$(KCP_VERSION)/src
KCP_SOURCE_VERSION := $(KCP_VERSION)
KCP_SOURCE_TREE := $(KCP_SOURCE)/go.mod
endif
ifneq ($(KCP_SOURCE),)
KCP_SOURCE_OUT := $(abspath _output/kcp-$(KCP_SOURCE_VERSION))
KCP := $(KCP_SOURCE_OUT)/kcp
CACHE_SERVER := $(KCP_SOURCE_OUT)/cache-server
KCP_FRONT_PROXY := $(KCP_SOURCE_OUT)/kcp-front-proxy
KCP_MOUNTS_TEST := $(KCP_SOURCE_OUT)/kcp-mounts.test
export KCP_REPO_DIR := $(abspath $(KCP_SOURCE))
else ifneq ($(KCP_BIN),)
KCP := $(abspath $(KCP_BIN))
CACHE_SERVER := $(abspath $(KCP_CACHE_SERVER_BIN))
KCP_FRONT_PROXY := $(abspath $(KCP_FRONT_PROXY_BIN))
KCP_MOUNTS_TEST := $(abspath $(KCP_MOUNTS_TEST_BIN))
else
KCP := $(BIN)/kcp
CACHE_SERVER := $(BIN)/cache-server
KCP_FRONT_PROXY := $(BIN)/kcp-front-proxy
KCP_MOUNTS_TEST := $(BIN)/kcp-mounts.test
endif
PROMETHEUS := $(BIN)/prometheus
PROMTOOL := $(BIN)/promtool
WORKSPACEMOUNTS := $(BIN)/workspacemounts
# The kubectl plugin, kubectl workspacemounts (cmd/kubectl-workspacemounts).
KUBECTL_PLUGIN := $(BIN)/kubectl-workspacemounts
GOLANGCI_LINT := $(BIN)/golangci-lint
DEEPCOPY_GEN := $(BIN)/deepcopy-gen
OPENAPI_GEN := $(BIN)/openapi-gen
HELM := $(BIN)/helm
ACTIONLINT := $(BIN)/actionlint
CRANE := $(BIN)/crane
KO := $(BIN)/ko
KREW := $(BIN)/krew
CYCLONEDX_GOMOD := $(BIN)/cyclonedx-gomod
# The version is set in one place, the VERSION file (the release, v0.1.0);
# hack/version.sh makes v0.1.0-N-g<sha> of a commit N past the one that set it.
# Both, and the commit, are linked into the binary (pkg/version).
RELEASE := $(shell tr -d '[:space:]' < VERSION)
# Evaluated once (:=), so that every step of one make run uses the same.
VERSION ?= $(shell hack/version.sh)
VERSION := $(VERSION)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
REVISION := $(REVISION)
VERSION_PKG := github.com/workspacemounts/workspacemounts/pkg/version
LDFLAGS := -s -w -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).revision=$(REVISION)
# make image: the multi-architecture image, built by ko (.ko.yaml, hack/image).
IMAGE_REPOSITORY ?= ghcr.io/workspacemounts/workspacemounts
IMAGE_TAG ?= $(RELEASE)
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
# The commit time, the image's creation time and every mtime in it: the same commit, the same digests.
IMAGE_CREATED ?= $(shell git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)
IMAGE_CREATED := $(IMAGE_CREATED)
IMAGE_DIR := _output/image
comma := ,
empty :=
space := $(empty) $(empty)
HOST_PLATFORM := $(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH)
HOST_BINARY := _output/bin/$(HOST_PLATFORM)/workspacemounts
HOST_PLUGIN := _output/bin/$(HOST_PLATFORM)/kubectl-workspacemounts
IMAGE_BINARIES := $(foreach p,$(subst $(comma), ,$(IMAGE_PLATFORMS)),_output/bin/$(subst /,_,$(p))/workspacemounts)
# make release-artifacts: what a tag publishes (.github/workflows/release.yaml),
# into _output/release: the image's binaries and these others, the kubectl
# plugin's archives (kubectl-workspacemounts-<tag>-<os>-<arch>.tar.gz) and its
# krew manifest (workspacemounts.yaml, from deploy/krew), the image's OCI
# archive, the chart's package, an SBOM per binary, SHA256SUMS and the release notes.
RELEASE_DIR := _output/release
RELEASE_ASSETS := $(RELEASE_DIR)/assets
# The binaries of darwin cost a cold build each (about 4 CPU-minutes), little once cached.
# make test checks the release with the image's platforms only, so that a cold CI run
# stays within its hour; make release-dry-run alone, and a tag, build darwin too.
ifneq ($(filter test,$(MAKECMDGOALS)),)
RELEASE_EXTRA_PLATFORMS ?=
endif
RELEASE_EXTRA_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
RELEASE_PLATFORMS := $(sort $(subst $(comma), ,$(IMAGE_PLATFORMS)) $(RELEASE_EXTRA_PLATFORMS))
RELEASE_BINARIES := $(foreach p,$(RELEASE_PLATFORMS),_output/bin/$(subst /,_,$(p))/workspacemounts)
# The kubectl plugin's, archived per platform with the LICENSE for krew (hack/release/artifacts.sh).
RELEASE_PLUGINS := $(foreach p,$(RELEASE_PLATFORMS),_output/bin/$(subst /,_,$(p))/kubectl-workspacemounts)
RELEASE_CHART := $(RELEASE_ASSETS)/workspacemounts-$(patsubst v%,%,$(RELEASE)).tgz
RELEASE_ENV = TAG=$(RELEASE) VERSION=$(VERSION) PLATFORMS="$(RELEASE_PLATFORMS)" IMAGE_DIR=$(IMAGE_DIR) \
  SOURCE_DATE_EPOCH=$$(date -d $(IMAGE_CREATED) +%s)
# Where a tag publishes the image and the chart (the names the chart's values,
# deploy/base and the docs use).
CHART_REPOSITORY ?= oci://ghcr.io/workspacemounts/charts

# Go test flags, e.g. make test GOTESTFLAGS=-v
GOTESTFLAGS ?=
E2E_TIMEOUT ?= 40m
# How many end-to-end tests run at once (go test -parallel; its default is
# GOMAXPROCS, 2 on CI): most of them wait on kcp, a plugin process or an
# outage, not on a core.
E2E_PARALLEL ?= 4
# How long each Go fuzz target runs in make test-fuzz (go test -fuzztime), e.g.
# make test-fuzz FUZZTIME=10m. The default is a count of inputs, not a time: Go
# before 1.27 can fail a target that found nothing with "context deadline
# exceeded" as a timed run ends (golang/go#75804), which a count never does.
# 5,000 inputs take 1 to 13 s per target on 2 cores (57 s for all ten).
FUZZTIME ?= 5000x
# make bench-controller (bench-routing, bench-virtual) BENCH_WORKSPACES=10000
BENCH_WORKSPACES ?= 1000

export KCP_BINARY := $(KCP)
export CACHE_SERVER_BINARY := $(CACHE_SERVER)
export KCP_FRONT_PROXY_BINARY := $(KCP_FRONT_PROXY)
export KCP_MOUNTS_TEST_BINARY := $(KCP_MOUNTS_TEST)
export WORKSPACEMOUNTS_BINARY := $(WORKSPACEMOUNTS)
export KUBECTL_WORKSPACEMOUNTS_BINARY := $(KUBECTL_PLUGIN)
export WORKSPACEMOUNTS_IMAGE := $(abspath $(IMAGE_DIR)/oci)
export PROMETHEUS_BINARY := $(PROMETHEUS)
export HELM_BINARY := $(HELM)

.PHONY: all
all: build

.PHONY: build
build: $(WORKSPACEMOUNTS) $(KUBECTL_PLUGIN) $(KCP) ## Build bin/workspacemounts, bin/kubectl-workspacemounts (the kubectl plugin) and bin/kcp.

# The host's binary of _output/bin, hard-linked (or copied): the tests run
# the very bytes that go into the image.
.PHONY: $(WORKSPACEMOUNTS)
$(WORKSPACEMOUNTS): $(HOST_BINARY)
	@mkdir -p $(@D)
	ln -f $< $@ 2>/dev/null || cp -f $< $@

# A static binary (no cgo) per <os>_<arch>, the image's (make image).
# Always handed to go build: its cache knows better than make whether anything changed.
.PHONY: $(sort $(HOST_BINARY) $(IMAGE_BINARIES) $(RELEASE_BINARIES))
$(sort $(HOST_BINARY) $(IMAGE_BINARIES) $(RELEASE_BINARIES)): _output/bin/%/workspacemounts:
	GOOS=$(word 1,$(subst _, ,$*)) GOARCH=$(word 2,$(subst _, ,$*)) CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/workspacemounts

# The kubectl plugin: bin/kubectl-workspacemounts is the host's of _output/bin,
# as bin/workspacemounts is; the release archives the others.
.PHONY: $(KUBECTL_PLUGIN)
$(KUBECTL_PLUGIN): $(HOST_PLUGIN)
	@mkdir -p $(@D)
	ln -f $< $@ 2>/dev/null || cp -f $< $@

.PHONY: $(sort $(HOST_PLUGIN) $(RELEASE_PLUGINS))
$(sort $(HOST_PLUGIN) $(RELEASE_PLUGINS)): _output/bin/%/kubectl-workspacemounts:
	GOOS=$(word 1,$(subst _, ,$*)) GOARCH=$(word 2,$(subst _, ,$*)) CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $@ ./cmd/kubectl-workspacemounts

.PHONY: image-binaries
image-binaries: $(IMAGE_BINARIES) ## Build the image's binaries, _output/bin/<os>_<arch>/workspacemounts (what the Dockerfile copies).

.PHONY: image
image: $(WORKSPACEMOUNTS) $(KO) $(CRANE) ## Build the multi-architecture image with ko into _output/image (OCI layout and tarballs; no container daemon).
	CRANE=$(CRANE) KO=$(KO) VERSION=$(VERSION) REVISION=$(REVISION) SOURCE_DATE_EPOCH=$$(date -d $(IMAGE_CREATED) +%s) \
	  hack/image/build.sh $(IMAGE_DIR) $(IMAGE_REPOSITORY) $(IMAGE_TAG) $(IMAGE_PLATFORMS)

# The release: make release-dry-run is what a tag's workflow
# (.github/workflows/release.yaml) does but the pushes, which is
# release-artifacts, release-verify, then release-publish. The tag is the
# VERSION file's (the workflow checks that it is the tag pushed and builds
# with VERSION=<tag>); the files are named by it, the binaries say VERSION.
# Notes: the CHANGELOG section of the tag; a dry run takes [Unreleased]'s
# when there is none yet, and says so.
RELEASE_NOTES_FLAGS ?=
.PHONY: release-dry-run
release-dry-run: RELEASE_NOTES_FLAGS := --unreleased-fallback
release-dry-run: release-verify release-publish-local ## Everything a tag's release workflow does but the pushes (those go to a registry on 127.0.0.1), into _output/release, then checked.
	@echo "release-dry-run: $(RELEASE_DIR) holds what the tag $(RELEASE) publishes, checked; nothing was pushed outside this machine ($(IMAGE_DIR)/oci would go to $(IMAGE_REPOSITORY):$(IMAGE_TAG), $(RELEASE_CHART) to $(CHART_REPOSITORY))."

# release-publish's pushes, to a registry of its own on 127.0.0.1 (crane
# registry serve, in memory), pulled back and compared; no GitHub release.
.PHONY: release-publish-local
release-publish-local: release-verify release-tools
	CRANE=$(CRANE) HELM=$(HELM) MAKE="$(MAKE)" hack/release/publish-local.sh $(VERSION) $(IMAGE_TAG) $(RELEASE_CHART)

.PHONY: release-binaries
release-binaries: $(RELEASE_BINARIES) $(RELEASE_PLUGINS) ## Build the released binaries, _output/bin/<os>_<arch>/workspacemounts and kubectl-workspacemounts: the image's platforms and darwin.

.PHONY: release-artifacts
release-artifacts: image release-binaries $(HELM) $(CYCLONEDX_GOMOD) ## Write the release into _output/release: assets/ (binaries, the kubectl plugin's archives and krew manifest, image archive, chart, SBOMs, SHA256SUMS) and notes.md.
	rm -rf $(RELEASE_DIR)
	mkdir -p $(RELEASE_ASSETS)
	$(HELM) package deploy/charts/workspacemounts --destination $(RELEASE_ASSETS)
	$(RELEASE_ENV) CYCLONEDX_GOMOD=$(CYCLONEDX_GOMOD) NOTES_FLAGS=$(RELEASE_NOTES_FLAGS) \
	  hack/release/artifacts.sh $(RELEASE_ASSETS) $(RELEASE_DIR)/notes.md
	@ls -l $(RELEASE_DIR) $(RELEASE_ASSETS)

.PHONY: release-verify
release-verify: release-artifacts $(HELM) $(KREW) ## Check _output/release: checksums, the SBOMs against the binaries, krew installs the plugin from its manifest, the notes, the chart package (helm lint).
	$(RELEASE_ENV) KREW=$(KREW) hack/release/verify.sh $(RELEASE_ASSETS) $(RELEASE_DIR)/notes.md
	$(HELM) lint --strict $(RELEASE_CHART)
	@test "$$($(HELM) show chart $(RELEASE_CHART) | sed -n 's/^appVersion: //p' | tr -d '"')" = $(RELEASE) || { echo "$(RELEASE_CHART): appVersion is not $(RELEASE)"; exit 1; }

# The pushes of a tag's workflow, after release-verify; logged in to ghcr.io
# (crane auth login, helm registry login) and with GH_TOKEN for gh. Run
# nowhere else.
.PHONY: release-tools
release-tools: $(CRANE) $(HELM) ## Build bin/crane and bin/helm, which release-publish pushes with.

# CRANE_FLAGS, HELM_PUSH_FLAGS and RELEASE_GITHUB=false: for
# release-publish-local's registry, which speaks plain HTTP.
CRANE_FLAGS ?=
HELM_PUSH_FLAGS ?=
RELEASE_GITHUB ?= true
.PHONY: release-publish
release-publish: release-tools
	$(CRANE) push $(CRANE_FLAGS) $(IMAGE_DIR)/oci $(IMAGE_REPOSITORY):$(IMAGE_TAG)
	$(HELM) push $(HELM_PUSH_FLAGS) $(RELEASE_CHART) $(CHART_REPOSITORY)
ifeq ($(RELEASE_GITHUB),true)
	gh release create $(RELEASE) --verify-tag --title $(RELEASE) --notes-file $(RELEASE_DIR)/notes.md $(RELEASE_ASSETS)/*
else
	@echo "release-publish: no GitHub release (RELEASE_GITHUB=$(RELEASE_GITHUB))"
endif

# kcp v0.28.1, the newest kcp server the module proxy serves whole; its own
# module pins its Kubernetes fork. hack/kcp/build.sh applies the backported
# fixes of hack/kcp/patches.
KCP_SOURCES := hack/kcp/go.mod hack/kcp/go.sum hack/kcp/build.sh hack/kcp-ldflags.sh $(wildcard hack/kcp/patches/*.patch)

.PHONY: kcp
kcp: $(KCP) $(CACHE_SERVER) $(KCP_FRONT_PROXY) $(KCP_MOUNTS_TEST) ## Build kcp, its cache-server and kcp-front-proxy, and kcp's own mounts e2e test (bin/: hack/kcp; or from KCP_SOURCE).

ifneq ($(KCP_SOURCE),)
ifeq ($(KCP_SOURCE_VERSION),)
$(error KCP_SOURCE needs KCP_SOURCE_VERSION, the tag of the tree, e.g. v0.32.3)
endif
$(KCP) $(CACHE_SERVER) $(KCP_FRONT_PROXY) $(KCP_MOUNTS_TEST) &: hack/kcp-source/build.sh $(KCP_SOURCE_TREE)
	GO=$(GO) hack/kcp-source/build.sh $(KCP_SOURCE) $(KCP_SOURCE_VERSION) $(KCP_SOURCE_OUT)

ifneq ($(KCP_SOURCE_TREE),)
$(KCP_SOURCE_TREE): hack/kcp-source/from-proxy.sh
	GO=$(GO) hack/kcp-source/from-proxy.sh $(KCP_VERSION) $(KCP_SOURCE)
endif
else ifeq ($(KCP_BIN),)
$(KCP): $(KCP_SOURCES)
	GO=$(GO) hack/kcp/build.sh kcp $@

# The cache server and the front-proxy of the same kcp, for the two-shard kcp
# the tests start (test/framework StartSharded).
$(CACHE_SERVER): $(KCP_SOURCES)
	GO=$(GO) hack/kcp/build.sh cache-server $@

$(KCP_FRONT_PROXY): $(KCP_SOURCES)
	GO=$(GO) hack/kcp/build.sh kcp-front-proxy $@

# kcp's own end-to-end test of mounts (TestMountsMachinery, test/e2e), compiled
# from the module cache with a copy of hack/kcp's module (-mod=mod adds what
# only the tests need to the copy), -trimpath (see hack/kcp-source/build.sh).
KCP_MOUNTS_TEST_MODULE := $(abspath _output/kcp-mounts-test)
$(KCP_MOUNTS_TEST): hack/kcp/go.mod hack/kcp/go.sum
	mkdir -p $(KCP_MOUNTS_TEST_MODULE)
	cp hack/kcp/go.mod hack/kcp/go.sum $(KCP_MOUNTS_TEST_MODULE)/
	cd hack/kcp && $(GO) test -c -trimpath -mod=mod -modfile=$(KCP_MOUNTS_TEST_MODULE)/go.mod -o $@ github.com/kcp-dev/kcp/test/e2e/mounts
endif

# Prometheus and promtool v0.316.0 (Prometheus 3.16), in a module of their own
# (hack/prometheus); remove_all_sd leaves out the service discovery of every
# cloud (static targets and files only), which the tests do not use.
PROMETHEUS_TAGS := remove_all_sd
$(PROMETHEUS): hack/prometheus/go.mod hack/prometheus/go.sum
	cd hack/prometheus && $(GO) build -tags $(PROMETHEUS_TAGS) -o $@ github.com/prometheus/prometheus/cmd/prometheus

$(PROMTOOL): hack/prometheus/go.mod hack/prometheus/go.sum
	cd hack/prometheus && $(GO) build -tags $(PROMETHEUS_TAGS) -o $@ github.com/prometheus/prometheus/cmd/promtool

$(GOLANGCI_LINT): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && $(GO) build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(ACTIONLINT): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && $(GO) build -o $@ github.com/rhysd/actionlint/cmd/actionlint

# The release's tools, in a module of their own (hack/tools/release).
$(CRANE): hack/tools/release/go.mod hack/tools/release/go.sum
	cd hack/tools/release && $(GO) build -o $@ github.com/google/go-containerregistry/cmd/crane
$(KO): hack/tools/release/go.mod hack/tools/release/go.sum
	cd hack/tools/release && $(GO) build -o $@ github.com/google/ko
$(KREW): hack/tools/release/go.mod hack/tools/release/go.sum
	cd hack/tools/release && $(GO) build -o $@ sigs.k8s.io/krew/cmd/krew
$(CYCLONEDX_GOMOD): hack/tools/release/go.mod hack/tools/release/go.sum
	cd hack/tools/release && $(GO) build -o $@ github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod

# helm v4.3.2, in a module of its own (hack/tools/helm): its Kubernetes
# libraries would move those of hack/tools.
$(HELM): hack/tools/helm/go.mod hack/tools/helm/go.sum
	cd hack/tools/helm && $(GO) build -o $@ helm.sh/helm/v4/cmd/helm

$(DEEPCOPY_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && $(GO) build -o $@ k8s.io/code-generator/cmd/deepcopy-gen

$(OPENAPI_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && $(GO) build -o $@ k8s.io/kube-openapi/cmd/openapi-gen

.PHONY: codegen
codegen: $(DEEPCOPY_GEN) $(OPENAPI_GEN) ## Regenerate the API's deep copies and OpenAPI definitions (zz_generated.*.go).
	DEEPCOPY_GEN=$(DEEPCOPY_GEN) OPENAPI_GEN=$(OPENAPI_GEN) hack/update-codegen.sh

.PHONY: verify-codegen
verify-codegen: $(DEEPCOPY_GEN) $(OPENAPI_GEN) ## Fail if the committed zz_generated files are not what make codegen writes.
	DEEPCOPY_GEN=$(DEEPCOPY_GEN) OPENAPI_GEN=$(OPENAPI_GEN) hack/verify-codegen.sh

.PHONY: verify-third-party
verify-third-party: ## Fail unless each copy under third_party/ is its upstream module with exactly the patch beside it.
	GO=$(GO) hack/verify-third-party.sh

.PHONY: test
test: test-unit test-chart test-rules test-fuzz test-e2e test-run release-dry-run ## Unit, alert rule, fuzz (briefly) and end-to-end tests; the release, made and checked without pushing.

.PHONY: test-unit
test-unit: verify-codegen verify-third-party $(HELM) ## Unit tests, with the race detector (after the generated and third-party files are checked).
	$(GO) test -race $(GOTESTFLAGS) ./...

# deploy/charts/workspacemounts: helm lint with the defaults and each example,
# then deploy/chart_test.go (helm template, compared with deploy/base).
.PHONY: test-chart
test-chart: $(HELM) ## The Helm chart: helm lint (each examples/*.yaml), then its Go tests (deploy/chart_test.go).
	$(HELM) lint --strict deploy/charts/workspacemounts
	@set -e; for f in deploy/charts/workspacemounts/examples/*.yaml; do \
	  echo "helm lint -f $$f"; $(HELM) lint --strict deploy/charts/workspacemounts -f $$f; \
	done
	$(GO) test $(GOTESTFLAGS) -run 'Chart' ./deploy/

# The PrometheusRule's groups are checked as a plain rule file too (deploy_test.go
# checks that they are the same as workspacemounts-alerts.yaml's).
.PHONY: test-rules
test-rules: $(PROMTOOL) ## promtool: check the alert rules (both files), run their unit tests (deploy/monitoring/tests).
	@mkdir -p _output
	sed -n '/^  groups:/,$$p' deploy/monitoring/prometheusrule.yaml | sed 's/^  //' > _output/prometheusrule-groups.yaml
	$(PROMTOOL) check rules deploy/monitoring/workspacemounts-alerts.yaml _output/prometheusrule-groups.yaml
	$(PROMTOOL) test rules deploy/monitoring/tests/*.yaml

.PHONY: test-fuzz
test-fuzz: ## Every Go fuzz target for FUZZTIME (5000 inputs; FUZZTIME=10m for a longer run).
	@set -e; for dir in $$(grep -rl --include='*_test.go' --exclude-dir=_output --exclude-dir=.git '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for target in $$(grep -h -o '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | cut -d' ' -f2); do \
	    echo "fuzz $$dir $$target ($(FUZZTIME))"; \
	    $(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) $$dir; \
	  done; \
	done

.PHONY: test-e2e
test-e2e: $(KCP) $(CACHE_SERVER) $(KCP_FRONT_PROXY) $(KCP_MOUNTS_TEST) $(WORKSPACEMOUNTS) $(KUBECTL_PLUGIN) image $(PROMETHEUS) $(HELM) ## End-to-end tests against a real kcp, a sharded one (and Prometheus; helm renders the chart for TestInstallObjectsServerDryRun) started by the tests; the slow parts with make test-slow.
	$(GO) test -tags e2e -race -count=1 -p 1 -parallel $(E2E_PARALLEL) -timeout $(E2E_TIMEOUT) $(GOTESTFLAGS) ./test/e2e/... ./test/framework/...

# The slow end-to-end tests, which make test leaves out or shortens so that a
# cold run on CI (.ci/run) stays within its hour: WORKSPACEMOUNTS_E2E_SLOW=1
# (test/framework SlowEnv) runs them in full. make test-slow runs both
# targets below (.github/workflows/nightly.yaml, every night).
.PHONY: test-slow
test-slow: test-sharded test-resilience test-tenant-bytes ## The slow end-to-end tests that make test leaves out or shortens: test-sharded, test-resilience and test-tenant-bytes (about 17 min warm on 2 cores).

.PHONY: test-sharded
test-sharded: $(KCP) $(CACHE_SERVER) $(KCP_FRONT_PROXY) $(WORKSPACEMOUNTS) ## The sharded tests in full: the framework's sharded kcp (TestShardedServer), the plugin on one (TestSharded, shard-2's return included), a shard added at run time to each.
	WORKSPACEMOUNTS_E2E_ADD_SHARD=1 WORKSPACEMOUNTS_E2E_SLOW=1 $(GO) test -tags e2e -race -count=1 -p 1 -timeout $(E2E_TIMEOUT) -run '^TestSharded' $(GOTESTFLAGS) ./test/framework/ ./test/e2e/

.PHONY: test-resilience
test-resilience: $(KCP) $(WORKSPACEMOUNTS) ## TestResilience with issue 8's outages: kcp paused and stopped for 2 minutes each (30 s in make test).
	WORKSPACEMOUNTS_E2E_SLOW=1 $(GO) test -tags e2e -race -count=1 -p 1 -timeout $(E2E_TIMEOUT) -run '^TestResilience$$' $(GOTESTFLAGS) ./test/e2e/

.PHONY: test-chaos
test-chaos: $(KCP) $(WORKSPACEMOUNTS) ## TestChaosSoak in full: 300 mounted Workspaces churning while kcp is paused and stopped, the leader killed and the next frozen past its Lease (30 in make test). Replay a seed with WORKSPACEMOUNTS_CHAOS_SEED=<seed>.
	WORKSPACEMOUNTS_E2E_SLOW=1 $(GO) test -tags e2e -race -count=1 -p 1 -timeout $(E2E_TIMEOUT) -run '^TestChaosSoak$$' $(GOTESTFLAGS) ./test/e2e/

.PHONY: test-tenant-bytes
test-tenant-bytes: $(KCP) $(WORKSPACEMOUNTS) ## TestTenantLabelsDoNotGrowThePlugin with 100 Workspaces of 1,500 labels (40 in make test).
	WORKSPACEMOUNTS_E2E_SLOW=1 $(GO) test -tags e2e -race -count=1 -p 1 -timeout $(E2E_TIMEOUT) -run '^TestTenantLabelsDoNotGrowThePlugin$$' $(GOTESTFLAGS) ./test/e2e/

.PHONY: lint
lint: $(GOLANGCI_LINT) lint-workflows ## golangci-lint with the kcp-like configuration in .golangci.yaml; actionlint.
	$(GOLANGCI_LINT) config verify
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-workflows
lint-workflows: $(ACTIONLINT) ## actionlint: the GitHub Actions workflows of .github/workflows.
	$(ACTIONLINT)

.PHONY: bench-controller
bench-controller: build ## Time until N mounted Workspaces reflect a flip of their mount objects: the plugin against kcp's in-tree controller, on one kcp.
	$(GO) run ./test/bench/controller --workspaces $(BENCH_WORKSPACES)

.PHONY: bench-routing
bench-routing: build ## Time until N mounted Workspaces have the right spec.URL and phase after a flip: kcp's in-tree controller, then the plugin (both flags), each on its own kcp.
	$(GO) run ./test/bench/controller --workspaces $(BENCH_WORKSPACES) --mode=routing

.PHONY: bench-virtual
bench-virtual: build ## The virtual workspace with N mounted Workspaces, Ready from the start: lists at * against kcp's, and watchers (in-tree controller off).
	$(GO) run ./test/bench/virtual --workspaces $(BENCH_WORKSPACES)

# make bench-sharded BENCH_SHARDED_WORKSPACES=5000 (per shard)
BENCH_SHARDED_WORKSPACES ?= 5000

.PHONY: bench-sharded
bench-sharded: build $(CACHE_SERVER) $(KCP_FRONT_PROXY) ## The plugin in sharded mode on a two-shard kcp with N mounted Workspaces per shard: flips per shard, lists at * through the front-proxy, memory.
	$(GO) run ./test/bench/sharded --workspaces $(BENCH_SHARDED_WORKSPACES)

.PHONY: bench-tenants
bench-tenants: build ## The virtual workspace under 50 tenants, a flood of made-up cluster names and an honest user: reviews, latency, memory.
	$(GO) run ./test/bench/tenants

# make run SHARDS=2: a sharded kcp (root shard, shard-2, cache server, front-proxy) instead.
SHARDS ?= 1

.PHONY: run
run: build $(if $(filter-out 1,$(SHARDS)),$(CACHE_SERVER) $(KCP_FRONT_PROXY)) ## Start a local kcp, the plugin and a demo (SHARDS=2: a sharded kcp).
	SHARDS=$(SHARDS) GO=$(GO) hack/run.sh

.PHONY: test-run
test-run: build $(if $(filter-out 1,$(SHARDS)),$(CACHE_SERVER) $(KCP_FRONT_PROXY)) ## make run, exercised: starts it, runs the kubectl line it prints, stops it (SHARDS=2: make run SHARDS=2).
	SHARDS=$(SHARDS) hack/test-run.sh

.PHONY: clean
clean: ## Remove binaries and the local kcp state.
	rm -rf bin .kcp _output

.PHONY: help
help:
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "%-18s %s\n", $$1, $$2}'
