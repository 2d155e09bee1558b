package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"cwm/internal/model/modeltest"
	"cwm/internal/narrate"
)

// TestTraceNarrateKilled kills cwm trace narrate with SIGKILL while the
// model is answering its fourth and fifth traces, and checks that a second
// run with the same output asks the model only for the traces not yet in
// it, and that the output then has every trace exactly once.
func TestTraceNarrateKilled(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	t.Setenv("CWM_HOME", home)
	funcs, traces, out := filepath.Join(dir, "funcs.jsonl"), filepath.Join(dir, "traces.jsonl"), filepath.Join(dir, "narrations.jsonl")
	var b strings.Builder
	const n = 8
	for i := range n {
		fmt.Fprintf(&b, `{"id": "t%d", "code": "def f(x):\n    return x * 2\n", "call": "f(%d)"}`+"\n", i, i)
	}
	if err := os.WriteFile(funcs, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, "", "trace", "func", "--in", funcs, "--out", traces, "--workers", "1"); code != 0 {
		t.Fatalf("trace func = %d: %s", code, errs)
	}

	// Until the kill, only the first three calls are answered; the others
	// wait until their request is dropped.
	var killed atomic.Bool
	var mu sync.Mutex
	var asked []string // the calls asked after the kill
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		_, rest, _ := strings.Cut(r.Issue(), "the result of the call f(")
		var x int
		fmt.Sscanf(rest, "%d", &x)
		if !killed.Load() && x >= 3 {
			return modeltest.Reply{Delay: 10 * time.Minute}
		}
		if killed.Load() {
			mu.Lock()
			asked = append(asked, fmt.Sprint(x))
			mu.Unlock()
		}
		return modeltest.Reply{Content: fmt.Sprintf("x is %d, doubled.\n[ANSWER] f(%d) == %d [/ANSWER]", x, x, 2*x)}
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	args := []string{"trace", "narrate", "--in", traces, "--out", out, "--model", "m", "--base-url", srv.URL,
		"--concurrency", "2", "--run-workers", "1", "--quiet"}
	cmd := cliChild(t, home, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for countLines(out) < 3 {
		select {
		case err := <-exited:
			t.Fatalf("the first run ended before the kill (%v):\n%s", err, errb.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("the first run wrote %d lines in 2 minutes:\n%s", countLines(out), errb.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	killed.Store(true)
	if got := countLines(out); got != 3 {
		t.Fatalf("the killed run wrote %d lines, want 3", got)
	}

	code, stdout, errs := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("resumed run = %d: %s", code, errs)
	}
	if !strings.Contains(stdout, "narrated 8 traces (m): ") || !strings.Contains(stdout, "resumed 3,") {
		t.Errorf("resumed run's summary:\n%s", stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != n-3 {
		t.Errorf("the resumed run asked for %v, want the %d traces not in the output", asked, n-3)
	}
	for _, x := range asked {
		if x < "3" {
			t.Errorf("the resumed run asked again for f(%s), already narrated", x)
		}
	}
	seen := map[string]int{}
	data, _ := os.ReadFile(out)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var l narrate.Line
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		seen[l.ID]++
	}
	for i := range n {
		if id := fmt.Sprintf("t%d", i); seen[id] != 1 {
			t.Errorf("%s appears %d times, want once", id, seen[id])
		}
	}
}
