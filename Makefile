# Plain targets; the Go tool does the work.
.PHONY: build run test lint bench soak browsers chromium firefox console-vendor jsclient containers

build:
	go build -o bin/jetbpm ./cmd/jetbpm

# The whole story in a minute (examples/demo.sh), then jetbpm keeps running.
run: build
	./examples/demo.sh

test: browsers jsclient
	go test -race -count=1 -timeout 20m ./...

# The console's browser tests drive Debian's Chromium and Firefox ESR
# (docs/console.md §5); browsers apt-get installs the missing ones.
browsers:
	@command -v chromium >/dev/null || { echo "installing chromium with apt-get"; $$(command -v sudo) apt-get update -qq && $$(command -v sudo) apt-get install -y -qq chromium; }
	@command -v firefox-esr >/dev/null || command -v firefox >/dev/null || { echo "installing firefox-esr with apt-get"; $$(command -v sudo) apt-get update -qq && $$(command -v sudo) apt-get install -y -qq firefox-esr; }
chromium firefox: browsers

# console-vendor refreshes the console's vendored viewers from npm, pinned:
# bpmn-js's diagram viewer and form-js's form viewer (its UMD bundle,
# minified with esbuild; legal comments kept at the end).
BPMNJS_VERSION ?= 18.31.1
FORMJS_VERSION ?= 1.23.0
ESBUILD_VERSION ?= 0.28.2
console-vendor:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	(cd "$$tmp" && npm pack --silent bpmn-js@$(BPMNJS_VERSION) @bpmn-io/form-js@$(FORMJS_VERSION) >/dev/null && \
	  mkdir bpmn-js form-js && tar xzf bpmn-js-*.tgz -C bpmn-js && tar xzf bpmn-io-form-js-*.tgz -C form-js); \
	d=engine/console/vendor; mkdir -p $$d; \
	cp "$$tmp/bpmn-js/package/dist/bpmn-viewer.production.min.js" "$$tmp/bpmn-js/package/dist/assets/bpmn-js.css" \
	   "$$tmp/bpmn-js/package/dist/assets/diagram-js.css" $$d/; \
	cp "$$tmp/bpmn-js/package/LICENSE" $$d/LICENSE; \
	cp "$$tmp/form-js/package/LICENSE" $$d/LICENSE-form-js; \
	cp "$$tmp/form-js/package/dist/assets/form-js.css" $$d/; \
	npx --yes esbuild@$(ESBUILD_VERSION) --minify --legal-comments=eof --log-level=warning \
	  "$$tmp/form-js/package/dist/form-viewer.umd.js" --outfile=$$d/form-viewer.umd.min.js; \
	printf 'bpmn-js %s (npm)\n@bpmn-io/form-js %s (npm; dist/form-viewer.umd.js minified by esbuild %s)\n' \
	  $(BPMNJS_VERSION) $(FORMJS_VERSION) $(ESBUILD_VERSION) > $$d/VERSION; ls -l $$d

# jsclient installs node (apt-get, when missing) and the pinned npm
# packages the client tests run: the real camunda-external-task-client-js
# (TestCamunda7JSClient, engine/camunda7/testdata/jsclient) and
# @camunda8/sdk (TestCamunda8NodeSDK, engine/camunda8/zeebegrpc/testdata/sdk)
# and @camunda8/orchestration-cluster-api (TestOrchestrationClusterClient,
# engine/camunda8/rest/testdata/client); node_modules is never committed.
JSCLIENT = engine/camunda7/testdata/jsclient
C8SDK = engine/camunda8/zeebegrpc/testdata/sdk
C8REST = engine/camunda8/rest/testdata/client
jsclient:
	@command -v node >/dev/null && command -v npm >/dev/null || \
		{ echo "installing node and npm with apt-get"; \
		  $$(command -v sudo) apt-get update -qq && $$(command -v sudo) apt-get install -y -qq nodejs npm; }
	cd $(JSCLIENT) && npm ci --no-audit --no-fund
	cd $(C8SDK) && npm ci --no-audit --no-fund
	cd $(C8REST) && npm ci --no-audit --no-fund

# gofmt checks the Go files git tracks or would track (not ignored ones).
# staticcheck runs at a pinned version through go run: nothing to install.
STATICCHECK = honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	go vet ./...
	go run $(STATICCHECK) ./...
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench:
	go test -run '^$$' -bench . -benchtime 1x ./...
	go build -o bin/jetbpm ./cmd/jetbpm
	./bin/jetbpm bench --scenario one-task --duration 3s
	./bin/jetbpm bench --scenario ten-inproc --duration 3s --no-baseline

# containers installs what soak's compose run needs (deploy/compose_soak_test.go):
# podman, podman-compose, runc, the CNI name plugin and a static busybox.
containers:
	@command -v podman-compose >/dev/null && command -v busybox >/dev/null || { echo "installing podman with apt-get"; \
	  $$(command -v sudo) apt-get update -qq && $$(command -v sudo) apt-get install -y -qq podman podman-compose runc \
	  golang-github-containernetworking-plugin-dnsname busybox-static; }

# soak runs the long kill -9 workload (2,000 instances, 10 engine kills),
# the long power-cut workloads (200 cuts of TestKillNine's, 30 each of the
# Zeebe worker's and compensation's), the cluster tests and compose.yaml's
# cluster in podman (TestComposeCluster), then fuzzes every fuzz target for FUZZTIME each
# (make test runs the short workload and the fuzz seeds).
FUZZTIME ?= 60s
FUZZ = ./jobs:FuzzDecide ./engine/partition:FuzzDecodeReport ./engine/messages:FuzzDecodeMessage ./expression:FuzzTranslate \
	./expression:FuzzLiteral ./engine/bpmnxml:FuzzParse ./streams:FuzzUnmarshal ./streams:FuzzUnmarshalChecked \
	./engine/api:FuzzDispatch ./cmd/jetbpm/internal/config:FuzzParse ./engine/cron:FuzzParse \
	./engine/httpapi:FuzzRequest ./internal/httpauth:FuzzParse ./engine/camunda7:FuzzDecodeVariables \
	./expression:FuzzComposite ./engine/camunda8:FuzzKey ./engine/camunda8/zeebegrpc:FuzzVariables ./engine/lost:FuzzDecodeFile \
	./engine/checkpoint:FuzzDecodeStart
soak: containers
	JETBPM_SOAK=1 go test -race -count=1 -run 'TestKillNine|TestPowerCut|TestClusterSurvivesNodeLosses|TestClusterLosesAnEngineAndANATSNode' -v ./cmd/jetbpm ./engine
	JETBPM_SOAK=1 go test -count=1 -run TestComposeCluster -v ./deploy
	@for t in $(FUZZ); do \
		echo "fuzz $$t for $(FUZZTIME)"; \
		go test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}" || exit 1; \
	done
