# The two commands: `make demo` and `make test`. Both install what is
# missing first (Debian packages via apt-get), so they work on a fresh machine.

GO      ?= go
BIN     := bin/cwm
# Static binary: no dynamic loader at start-up, which is paid by every
# sandbox init and worker that re-executes cwm.
export CGO_ENABLED := 0
PYTHON  := /usr/bin/python3
DEB_PKGS := python3 python3-pytest python3-venv python3-setuptools git patch bubblewrap hyperfine apparmor slurm-wlm munge docker-registry apache2-utils chromium mmdebstrap debootstrap skopeo umoci

.PHONY: all setup build test test-vm bench demo clean

all: build

# setup installs the Debian packages cwm's tests and benchmarks use, and only
# those missing; running it again does nothing.
setup:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "setup: installing$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/cwm

test: setup
	$(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...
	GOARCH=arm64 $(GO) build -o /dev/null ./cmd/cwm
	$(GO) test -count=1 -timeout 60m ./...

# test-vm runs the sandbox, environment, trace and task tests in a Debian 12
# VM booted with cgroup v2 only, as root and as an ordinary user through a
# delegated cgroup, and prints a table of what passed (scripts/test-vm.sh;
# minutes, and more the first time, which builds the VM's root filesystem).
test-vm:
	./scripts/test-vm.sh

# bench runs every benchmark that compares cwm with a baseline in the same
# run; docs/benchmarks.md records the results. Each line can be run alone.
bench: setup build
	$(GO) test -run '^$$' -bench 'StartExecClose|ShellRoundTrip|Reset' -benchtime 200x -timeout 30m ./internal/sandbox/
	$(GO) test -run '^$$' -bench 'ManyOpen' -benchtime 1x -timeout 30m ./internal/sandbox/
	$(GO) test -run '^$$' -bench 'SandboxRunProcess' -benchtime 300x -timeout 30m ./internal/cli/sandboxcmd/
	$(GO) test -run '^$$' -bench 'CruxEvalThroughput' -benchtime 3x -timeout 30m ./internal/tracer/
	$(GO) test -run '^$$' -bench 'TracerOverhead' -benchtime 1x -timeout 30m ./internal/tracer/
	$(GO) test -run '^$$' -bench 'EnvTest' -benchtime 10x -timeout 30m ./internal/envbuild/
	$(GO) test -run '^$$' -bench 'Validation' -benchtime 1x -timeout 60m ./internal/tasks/
	$(GO) test -run '^$$' -bench 'Step' -benchtime 2000x -timeout 30m ./internal/agent/
	$(GO) test -run '^$$' -bench 'Concurrent' -benchtime 1x -timeout 30m ./internal/agent/
	$(GO) test -run '^$$' -bench 'Dedup50k' -benchtime 3x -timeout 30m ./internal/dedup/
	$(GO) test -run '^$$' -bench 'ExactVsLSH10k' -benchtime 1x -timeout 60m ./internal/dedup/
	$(GO) test -run '^$$' -bench 'EnvPull' -benchtime 10x -timeout 30m ./deploy/slurm/
	# The Slurm arrays' wall times against one process are logged by the tests that run them.
	$(GO) test -run 'TraceFuncArray|TasksMutateArray' -v -count=1 -timeout 60m ./deploy/slurm/ | grep -E 'single process|^(ok|FAIL|---)'
	$(GO) test -run '^$$' -bench 'ConcurrentWS' -benchtime 60x -timeout 30m ./internal/envserver/
	$(GO) test -run '^$$' -bench 'Reset|Clone' -benchtime 100x -timeout 30m ./internal/envserver/
	$(GO) test -run '^$$' -bench 'IdleEpisodes' -benchtime 1x -timeout 30m ./internal/envserver/
	$(GO) test -run '^$$' -bench 'Soak' -benchtime 10000x -timeout 60m ./internal/envserver/
	$(GO) test -run '^$$' -bench 'Harness' -benchtime 3x -timeout 30m ./internal/eval/
	$(GO) test -run '^$$' -bench 'Score' -benchtime 200x -timeout 30m ./internal/eval/
	$(GO) test -run '^$$' -bench 'Select' -benchtime 1x -timeout 60m ./internal/selection/

demo: setup build
	./scripts/demo.sh

clean:
	rm -rf bin
