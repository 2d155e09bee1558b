package envserver

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// stepBuckets are the upper bounds of the step latency histogram, in
// seconds: a shell round trip is a fraction of a millisecond, a test run
// seconds to minutes.
var stepBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// metrics are the server's counters, written in Prometheus' text format
// by /metrics.
type metrics struct {
	mu          sync.Mutex // guards every field
	slots       int
	conns       int
	sessions    map[string]int // open episodes by kind
	steps       map[string]int64
	resets      map[string]int64
	clones      map[string]int64
	checkpoints map[string]int64
	rollbacks   map[string]int64
	errors      map[string]int64 // by code
	ended       map[[2]string]int64
	reapedTotal int64
	// machineRefusals counts new episodes refused for the machine's
	// task limits (taskRoom), not for --max-sessions.
	machineRefusals int64
	hist            map[string]*histogram // step latency by kind
}

type histogram struct {
	counts []int64 // per bucket, not cumulative
	sum    float64
	n      int64
}

func newMetrics() *metrics {
	return &metrics{sessions: map[string]int{}, steps: map[string]int64{}, resets: map[string]int64{},
		clones: map[string]int64{}, checkpoints: map[string]int64{}, rollbacks: map[string]int64{}, errors: map[string]int64{}, ended: map[[2]string]int64{}, hist: map[string]*histogram{}}
}

func (m *metrics) with(f func()) {
	m.mu.Lock()
	f()
	m.mu.Unlock()
}

func (m *metrics) setSlots(n int)            { m.with(func() { m.slots = n }) }
func (m *metrics) connected(d int)           { m.with(func() { m.conns += d }) }
func (m *metrics) sessionOpened(kind string) { m.with(func() { m.sessions[kind]++ }) }
func (m *metrics) sessionClosed(kind string) { m.with(func() { m.sessions[kind]-- }) }
func (m *metrics) reset(kind string)         { m.with(func() { m.resets[kind]++ }) }
func (m *metrics) cloned(kind string)        { m.with(func() { m.clones[kind]++ }) }
func (m *metrics) failed(code string)        { m.with(func() { m.errors[code]++ }) }
func (m *metrics) checkpointed(kind string)  { m.with(func() { m.checkpoints[kind]++ }) }
func (m *metrics) rolledBack(kind string)    { m.with(func() { m.rollbacks[kind]++ }) }
func (m *metrics) reaped()                   { m.with(func() { m.reapedTotal++ }) }
func (m *metrics) machineRefused()           { m.with(func() { m.machineRefusals++ }) }
func (m *metrics) finished(kind, why string) { m.with(func() { m.ended[[2]string{kind, why}]++ }) }
func (m *metrics) stepped(kind string, d time.Duration) {
	m.with(func() {
		m.steps[kind]++
		h := m.hist[kind]
		if h == nil {
			h = &histogram{counts: make([]int64, len(stepBuckets))}
			m.hist[kind] = h
		}
		s := d.Seconds()
		for i, b := range stepBuckets {
			if s <= b {
				h.counts[i]++
				break
			}
		}
		h.sum += s
		h.n++
	})
}

// write writes the metrics in Prometheus' text exposition format.
func (m *metrics) write(w io.Writer, maxSessions int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	head := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	byKind := func(name string, vals map[string]int64) {
		for _, k := range []string{KindSWE, KindTrace, KindShell} {
			fmt.Fprintf(&b, "%s{kind=%q} %d\n", name, k, vals[k])
		}
	}
	head("cwm_serve_sessions", "gauge", "Open episodes by kind.")
	for _, k := range []string{KindSWE, KindTrace, KindShell} {
		fmt.Fprintf(&b, "cwm_serve_sessions{kind=%q} %d\n", k, m.sessions[k])
	}
	head("cwm_serve_slots", "gauge", "Slots taken: open episodes and /ws connections without one.")
	fmt.Fprintf(&b, "cwm_serve_slots %d\n", m.slots)
	head("cwm_serve_max_sessions", "gauge", "The --max-sessions limit.")
	fmt.Fprintf(&b, "cwm_serve_max_sessions %d\n", maxSessions)
	head("cwm_serve_machine_refusals_total", "counter", "New episodes refused because the machine was within reach of a task limit (pid_max, threads-max, pids.max, Go's thread cap).")
	fmt.Fprintf(&b, "cwm_serve_machine_refusals_total %d\n", m.machineRefusals)
	head("cwm_serve_connections", "gauge", "Open /ws connections.")
	fmt.Fprintf(&b, "cwm_serve_connections %d\n", m.conns)
	head("cwm_serve_resets_total", "counter", "Episodes started, by kind.")
	byKind("cwm_serve_resets_total", m.resets)
	head("cwm_serve_clones_total", "counter", "Episodes cloned, by kind.")
	byKind("cwm_serve_clones_total", m.clones)
	head("cwm_serve_checkpoints_total", "counter", "Checkpoints taken, by kind.")
	byKind("cwm_serve_checkpoints_total", m.checkpoints)
	head("cwm_serve_rollbacks_total", "counter", "Rollbacks to a checkpoint, by kind.")
	byKind("cwm_serve_rollbacks_total", m.rollbacks)
	head("cwm_serve_steps_total", "counter", "Steps run, by kind.")
	byKind("cwm_serve_steps_total", m.steps)
	head("cwm_serve_step_seconds", "histogram", "Step latency in the server, by kind.")
	for _, k := range []string{KindSWE, KindTrace, KindShell} {
		h := m.hist[k]
		if h == nil {
			h = &histogram{counts: make([]int64, len(stepBuckets))}
		}
		var cum int64
		for i, ub := range stepBuckets {
			cum += h.counts[i]
			fmt.Fprintf(&b, "cwm_serve_step_seconds_bucket{kind=%q,le=%q} %d\n", k, fmt.Sprint(ub), cum)
		}
		fmt.Fprintf(&b, "cwm_serve_step_seconds_bucket{kind=%q,le=\"+Inf\"} %d\n", k, h.n)
		fmt.Fprintf(&b, "cwm_serve_step_seconds_sum{kind=%q} %g\n", k, h.sum)
		fmt.Fprintf(&b, "cwm_serve_step_seconds_count{kind=%q} %d\n", k, h.n)
	}
	head("cwm_serve_episodes_finished_total", "counter", "Episodes that ended, by kind and exit reason.")
	keys := make([][2]string, 0, len(m.ended))
	for k := range m.ended {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	for _, k := range keys {
		fmt.Fprintf(&b, "cwm_serve_episodes_finished_total{kind=%q,exit_reason=%q} %d\n", k[0], k[1], m.ended[k])
	}
	head("cwm_serve_errors_total", "counter", "Errors answered, by OpenEnv code (and UNAUTHORIZED, MESSAGE_TOO_BIG).")
	codes := make([]string, 0, len(m.errors))
	for c := range m.errors {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		fmt.Fprintf(&b, "cwm_serve_errors_total{code=%q} %d\n", c, m.errors[c])
	}
	head("cwm_serve_reaped_total", "counter", "Episodes and connections closed after their idle timeout.")
	fmt.Fprintf(&b, "cwm_serve_reaped_total %d\n", m.reapedTotal)
	io.WriteString(w, b.String())
}

// serveMetrics is GET /metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	s.metrics.write(w, s.opts.MaxSessions)
}
