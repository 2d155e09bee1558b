# The two commands: `make demo` and `make test`. Both install what is
# missing first (Debian packages via apt-get), so they work on a fresh machine.

GO      ?= go
BIN     := bin/cwm
# Static binary: no dynamic loader at start-up, which is paid by every
# sandbox init and worker that re-executes cwm.
export CGO_ENABLED := 0
PYTHON  := /usr/bin/python3
DEB_PKGS := python3 python3-pytest python3-venv python3-setuptools git patch bubblewrap hyperfine

.PHONY: all setup build test bench demo clean

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
	$(GO) test -count=1 -timeout 60m ./...

bench: setup build
	$(GO) test -run '^$$' -bench . -benchtime 200x -timeout 60m ./internal/sandbox/

demo: setup build
	./scripts/demo.sh

clean:
	rm -rf bin
