package tracer

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/base/basetest"
)

// advCase is one case of testdata/adversarial.txt (see its header).
type advCase struct {
	name    string
	code    string
	headers map[string][]string
}

func loadAdversarial(tb testing.TB) []advCase {
	tb.Helper()
	data, err := os.ReadFile("testdata/adversarial.txt")
	if err != nil {
		tb.Fatal(err)
	}
	var cases []advCase
	for _, chunk := range strings.Split(string(data), "\n=== ")[1:] {
		name, rest, _ := strings.Cut(chunk, "\n")
		head, code, ok := strings.Cut(rest, "\n---\n")
		if !ok {
			tb.Fatalf("adversarial case %s: no --- line", name)
		}
		c := advCase{name: strings.TrimSpace(name), code: code, headers: map[string][]string{}}
		for _, h := range strings.Split(head, "\n") {
			k, v, ok := strings.Cut(h, ": ")
			if !ok {
				tb.Fatalf("adversarial case %s: bad header %q", name, h)
			}
			c.headers[k] = append(c.headers[k], v)
		}
		if len(c.headers["call"]) != 1 || len(c.headers["status"]) != 1 {
			tb.Fatalf("adversarial case %s: want one call and one status header", name)
		}
		cases = append(cases, c)
	}
	return cases
}

// EnvAdversarialBase runs TestAdversarial on a Debian test base's Python
// (bullseye, trixie) instead of the host's; docs/traces.md, "Python
// versions", lists the cases whose outcome differs there, and why.
const EnvAdversarialBase = "CWM_TRACER_ADVERSARIAL_BASE"

func TestAdversarial(t *testing.T) {
	cases := loadAdversarial(t)
	if len(cases) < 30 {
		t.Fatalf("%d adversarial cases, want at least 30", len(cases))
	}
	// A pool of its own with a short timeout: several cases never end.
	// Three workers: those cases mostly wait, so they overlap. The timeout
	// is wall clock while the cases that must finish (a __repr__ stopped
	// after 100 ms of CPU at each of several line events) need CPU time:
	// 8 s leaves them room on a machine loaded many times over.
	rt := testRuntime(t)
	opts := Options{Workers: 3, Timeout: 8 * time.Second}
	if suite := os.Getenv(EnvAdversarialBase); suite != "" {
		opts.Base = basetest.Debian(t, suite).Rootfs()
	}
	p, err := NewPool(context.Background(), rt, opts)
	if err != nil {
		t.Fatal(err)
	}
	// With one id mapped, the program is the tracer's own user: the cases
	// with a one-id header say what they give then, and each of them may
	// end its worker.
	restarts := 0
	if rt.IDs().Count == 1 {
		for i, c := range cases {
			if w := c.headers["one-id"]; len(w) > 0 {
				status, reason, _ := strings.Cut(w[0], " ")
				cases[i].headers = map[string][]string{"call": c.headers["call"], "status": {status}, "error": {reason}}
				restarts++
			}
		}
	}
	defer p.Close()
	results := make([]Result, len(cases))
	var wg sync.WaitGroup
	sem := make(chan bool, 3)
	for i, c := range cases {
		wg.Add(1)
		sem <- true
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = p.Trace(context.Background(), Func{ID: c.name, Code: c.code, Call: c.headers["call"][0]})
		}()
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkAdversarial(t, c, results[i]) })
	}
	// No case may have killed a worker (but the one-id cases above): each
	// server started exactly once, and the pool still traces correctly.
	started := 0
	for _, w := range p.all {
		started += w.gen
	}
	if want := len(p.all) + restarts; started != want {
		t.Errorf("the pool's %d workers were started %d times, want %d", len(p.all), started, want)
	}
	if r := p.Trace(context.Background(), Func{ID: "after", Code: paperCode, Call: "f(1,3)"}); r.Text != paperText() {
		t.Errorf("after the adversarial cases, the paper example gives status %s (%s)", r.Status, r.Error)
	}
}

func checkAdversarial(t *testing.T, c advCase, r Result) {
	h := c.headers
	if !contains(strings.Split(h["status"][0], "|"), string(r.Status)) {
		t.Fatalf("status %s (error %q), want %s", r.Status, r.Error, h["status"][0])
	}
	if r.Status.Complete() != (r.Text != "") {
		t.Errorf("status %s with text of %d bytes", r.Status, len(r.Text))
	}
	if !r.Status.Complete() && r.Error == "" {
		t.Errorf("status %s without a reason", r.Status)
	}
	if w := h["output"]; len(w) > 0 && r.Output != w[0] {
		t.Errorf("output = %q, want %q", r.Output, w[0])
	}
	for _, w := range h["text"] {
		if !strings.Contains(r.Text, w) {
			t.Errorf("text does not contain %q:\n%s", w, r.Text)
		}
	}
	for _, w := range h["frames"] {
		if !framesContain(r.Frames, w) {
			t.Errorf("no frame contains %q", w)
		}
	}
	for _, w := range h["error"] {
		if !strings.Contains(r.Error, w) {
			t.Errorf("error = %q, want it to contain %q", r.Error, w)
		}
	}
	for _, w := range h["leak"] {
		if !strings.Contains(r.Leak, w) {
			t.Errorf("leak = %q, want it to contain %q", r.Leak, w)
		}
	}
	for _, w := range h["stdout"] {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("stdout = %.80q, want it to contain %q", r.Stdout, w)
		}
	}
}

// framesContain reports whether a frame's locals (as "name": "value") or
// arg contain s.
func framesContain(frames []Frame, s string) bool {
	for _, f := range frames {
		if strings.Contains(f.Arg, s) {
			return true
		}
		for _, l := range f.Locals {
			if strings.Contains(`"`+l.Name+`": "`+l.Value+`"`, s) {
				return true
			}
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
