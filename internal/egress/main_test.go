package egress

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
)

var testRT *sandbox.Runtime

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "egress", func(rt *sandbox.Runtime, _ string) { testRT = rt })
}

// newSandbox is a sandbox on the host's /usr (its python3 and pip) that the
// test closes.
func newSandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	s, err := testRT.New(context.Background(), sandbox.Config{Workdir: "/tmp", Limits: sandbox.Limits{Timeout: 3 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sb is a test's sandbox.
type sb struct{ *sandbox.Sandbox }

func (s sb) run(t *testing.T, r *Relay, cmd string) sandbox.Result {
	t.Helper()
	return run(t, s.Sandbox, r, cmd)
}

// run runs a shell command line in s with the relay's environment (r
// nil: none).
func run(t *testing.T, s *sandbox.Sandbox, r *Relay, cmd string) sandbox.Result {
	t.Helper()
	env := []string{"HOME=/tmp", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1"}
	if r != nil {
		env = append(env, r.Env()...)
	}
	res, err := s.Exec(context.Background(), sandbox.Cmd{Shell: cmd, Env: env})
	if err != nil {
		t.Fatalf("Exec(%q): %v", cmd, err)
	}
	return res
}

func output(r sandbox.Result) string {
	return strings.TrimSpace(string(r.Stdout) + "\n" + string(r.Stderr))
}

// serve runs h on the host's loopback until the test ends and returns its
// host:port.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}
