package envserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/clients/go/envclient"
	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/envbuild"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// The benchmarks run the server on the example environment
// (examples/textkit, built once per test binary), on loopback, and drive
// it with the Go client; docs/benchmarks.md records their figures.

var textkit struct {
	once sync.Once
	home string
	env  *env.Env
	err  error
}

// textkitEnv builds the example repository's environment once.
func textkitEnv(b *testing.B, sbs *env.Sandboxes) (string, *env.Env) {
	textkit.once.Do(func() {
		textkit.home, textkit.err = os.MkdirTemp("", "cwm-serve-bench-")
		if textkit.err != nil {
			return
		}
		textkit.env, textkit.err = envbuild.Build(context.Background(), sbs, envbuild.Options{
			Home: textkit.home, Source: "../../examples/textkit", Name: "textkit", Runs: 1})
	})
	if textkit.err != nil {
		b.Fatalf("build examples/textkit: %v", textkit.err)
	}
	return textkit.home, textkit.env
}

// benchServer is a server on textkit with a task whose tree is the
// environment's own (no bug to plant: what a reset costs is the copy).
type benchServer struct {
	srv    *Server
	url    string
	rt     *sandbox.Runtime
	rtHome string // the runtime's home: its run directories
	env    *env.Env
	home   string
	cancel context.CancelFunc
	done   chan error
}

// newBenchServer starts the server; warmIdle is how long the runtime
// keeps a closed sandbox warm (0: its default, 30 s).
func newBenchServer(b *testing.B, warmIdle time.Duration, edit func(*Options)) *benchServer {
	rtHome := b.TempDir()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: rtHome, Warm: 64, WarmIdle: warmIdle})
	if err != nil {
		b.Fatal(err)
	}
	sbs := env.NewSandboxes(rt)
	home, e := textkitEnv(b, sbs)
	tk := task.Task{InstanceID: "textkit-bench", EnvID: e.ID, FailToPass: e.Passing()[:1], ProblemStatement: "benchmark"}
	opts := Options{Sandboxes: sbs, Store: env.NewStore(home), Tasks: []task.Task{tk}, MaxSessions: 512,
		Mapping: rewardMapping("binary")}
	opts.Limits.MaxTurns = 1 << 30 // benchmarks step one episode many times
	if edit != nil {
		edit(&opts)
	}
	srv, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	bs := &benchServer{srv: srv, url: Addr(ln), rt: rt, rtHome: rtHome, env: e, home: home, cancel: cancel, done: make(chan error, 1)}
	go func() { bs.done <- srv.Serve(ctx, ln) }()
	b.Cleanup(func() {
		cancel()
		<-bs.done
		rt.Close()
	})
	return bs
}

// settle waits until the sandbox runtime's background work (warm
// sandboxes' resets, spare branches) is done, so that what is timed next
// does not share the processors with it.
func (bs *benchServer) settle(b *testing.B) {
	if err := bs.rt.Settle(context.Background()); err != nil {
		b.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func quantile(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return ms(d[int(float64(len(d)-1)*q)])
}

var stepTrue = json.RawMessage(`{"text": "<tool: bash>\ntrue\n</tool>"}`)

// BenchmarkConcurrentWS: 64 clients step `true` over /ws at once, b.N
// steps each; the baseline is the same steps made in-process through the
// server's Go API (planReset, startEpisode, stepEntry) by 64 goroutines,
// in the same run. The two alternate in three rounds, so that a machine
// whose load drifts weighs on both alike. Then one client steps alone,
// alternating /ws and in-process step by step: the per-step cost of the
// transport without queueing.
func BenchmarkConcurrentWS(b *testing.B) {
	const clients, rounds = 64, 3
	bs := newBenchServer(b, 0, nil)
	ctx := context.Background()
	shell := map[string]any{"kind": "shell", "env": bs.env.ID}
	raw, _ := json.Marshal(shell)
	c := envclient.New(bs.url, "", nil)
	wsStep := func() func() error {
		s, err := c.Dial(ctx, "")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		if _, err := s.Reset(ctx, shell); err != nil {
			b.Fatal(err)
		}
		return func() error { _, err := s.Step(ctx, stepTrue); return err }
	}
	goStep := func() func() error {
		plan, err := bs.srv.planReset(raw)
		if err != nil {
			b.Fatal(err)
		}
		if err := bs.srv.acquire(); err != nil {
			b.Fatal(err)
		}
		ep, _, err := bs.srv.startEpisode(ctx, plan)
		if err != nil {
			b.Fatal(err)
		}
		e, err := bs.srv.register("", plan.kind, ep, nil)
		if err != nil {
			b.Fatal(err)
		}
		return func() error { _, err := bs.srv.stepEntry(ctx, e, stepTrue); return err }
	}
	var wsSteps, goSteps []func() error
	for i := 0; i < clients; i++ {
		wsSteps, goSteps = append(wsSteps, wsStep()), append(goSteps, goStep())
	}
	// run makes n steps with each of steps at once.
	run := func(steps []func() error, n int) (time.Duration, []time.Duration) {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		t0 := time.Now()
		for _, do := range steps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := make([]time.Duration, 0, n)
				for k := 0; k < n; k++ {
					t := time.Now()
					if err := do(); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return time.Since(t0), lat
	}
	b.ResetTimer()
	var wsLat, goLat []time.Duration
	var wsTime, goTime time.Duration
	per := max(b.N/rounds, 1)
	for r := 0; r < rounds; r++ {
		d, l := run(wsSteps, per)
		wsTime, wsLat = wsTime+d, append(wsLat, l...)
		d, l = run(goSteps, per)
		goTime, goLat = goTime+d, append(goLat, l...)
	}
	var ws1, go1 []time.Duration
	for k := 0; k < 10*b.N; k++ {
		for i, do := range []func() error{wsSteps[0], goSteps[0]} {
			t := time.Now()
			if err := do(); err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				ws1 = append(ws1, time.Since(t))
			} else {
				go1 = append(go1, time.Since(t))
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(wsLat))/wsTime.Seconds(), "ws-steps/s")
	b.ReportMetric(quantile(wsLat, 0.5), "ws-p50-ms")
	b.ReportMetric(quantile(wsLat, 0.99), "ws-p99-ms")
	b.ReportMetric(float64(len(goLat))/goTime.Seconds(), "go-steps/s")
	b.ReportMetric(quantile(goLat, 0.5), "go-p50-ms")
	b.ReportMetric(quantile(goLat, 0.99), "go-p99-ms")
	b.ReportMetric(quantile(ws1, 0.5), "one-ws-p50-ms")
	b.ReportMetric(quantile(go1, 0.5), "one-go-p50-ms")
	b.ReportMetric(quantile(ws1, 0.5)-quantile(go1, 0.5), "one-added-p50-ms")
}

// BenchmarkReset: b.N resets over REST of a swe episode (the prepared
// task copied, a session started) and of a shell episode, each closed
// before the next; the first swe reset, which prepares the task, is not
// counted.
func BenchmarkReset(b *testing.B) {
	bs := newBenchServer(b, 0, nil)
	ctx := context.Background()
	c := envclient.New(bs.url, "", nil)
	measure := func(reset map[string]any) []time.Duration {
		r, err := c.Create(ctx, reset) // prepares the task, warms the pool
		if err != nil {
			b.Fatal(err)
		}
		c.Close(ctx, r.EpisodeID)
		var lat []time.Duration
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			r, err := c.Create(ctx, reset)
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			c.Close(ctx, r.EpisodeID)
		}
		return lat
	}
	b.ResetTimer()
	swe := measure(map[string]any{"task_id": "textkit-bench"})
	shell := measure(map[string]any{"kind": "shell", "env": bs.env.ID})
	b.StopTimer()
	b.ReportMetric(quantile(swe, 0.5), "swe-p50-ms")
	b.ReportMetric(quantile(swe, 0.99), "swe-p99-ms")
	b.ReportMetric(quantile(shell, 0.5), "shell-p50-ms")
}

// manyFilesEnv is an environment whose repository holds n files.
func manyFilesEnv(b *testing.B, home string, n int) *env.Env {
	layer := b.TempDir()
	for i := 0; i < n; i++ {
		d := filepath.Join(layer, "repo", "pkg", strconv.Itoa(i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.py", i)), []byte("x = 1\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return envtest.Put(b, home, "files10k", layer)
}

// changed100 starts an episode and writes 100 files in /repo/changed (the
// session left there, CHANGED exported); its id.
func changed100(b *testing.B, c *envclient.Client, reset map[string]any) string {
	ctx := context.Background()
	r, err := c.Create(ctx, reset)
	if err != nil {
		b.Fatal(err)
	}
	write100 := json.RawMessage(`{"text": "<tool: bash>\nmkdir -p /repo/changed && cd /repo/changed && for i in $(seq 100); do echo $i > f$i.txt; done; export CHANGED=100\n</tool>"}`)
	if _, err := c.Step(ctx, r.EpisodeID, write100); err != nil {
		b.Fatal(err)
	}
	return r.EpisodeID
}

// forkAndStep times fork (a clone, a branch of an episode that wrote 100
// files in /repo/changed and exported CHANGED), then with the new
// episode's first step, which checks its session state and files (and
// pays whatever of the fork's work was left to it); the new one is closed.
// The sandbox runtime's background work is waited for first.
func forkAndStep(b *testing.B, bs *benchServer, c *envclient.Client, fork func() (envclient.State, error)) (time.Duration, time.Duration) {
	ctx := context.Background()
	bs.settle(b)
	check := json.RawMessage(`{"text": "<tool: bash>\necho $PWD $CHANGED $(ls | wc -l)\n</tool>"}`)
	t0 := time.Now()
	st, err := fork()
	if err != nil {
		b.Fatal(err)
	}
	t1 := time.Now()
	o, err := c.Step(ctx, st.ID(), check)
	if err != nil {
		b.Fatal(err)
	}
	var got struct{ Output string }
	if err := json.Unmarshal(o.Observation, &got); err != nil || got.Output != "/repo/changed 100 100" {
		b.Fatalf("the new episode's first step printed %q (%v), want its directory, variable and files", got.Output, err)
	}
	d, withStep := t1.Sub(t0), time.Since(t0)
	c.Close(ctx, st.ID())
	return d, withStep
}

// BenchmarkClone: b.N clones over REST of an episode that changed 100
// files (written by one bash step), on the example environment and on an
// environment of 10,000 files; each clone is closed before the next.
func BenchmarkClone(b *testing.B) {
	bs := newBenchServer(b, 0, nil)
	big := manyFilesEnv(b, bs.home, 10000)
	defer os.RemoveAll(filepath.Join(bs.home, "envs", big.ID))
	ctx := context.Background()
	c := envclient.New(bs.url, "", nil)
	measure := func(reset map[string]any) (clone, cloneStep []time.Duration) {
		id := changed100(b, c, reset)
		defer c.Close(ctx, id)
		var lat, withStep []time.Duration
		for i := 0; i < b.N+1; i++ {
			d, ds := forkAndStep(b, bs, c, func() (envclient.State, error) { return c.Clone(ctx, id) })
			if i > 0 { // the first warms the pool
				lat, withStep = append(lat, d), append(withStep, ds)
			}
		}
		return lat, withStep
	}
	b.ResetTimer()
	small, smallStep := measure(map[string]any{"kind": "shell", "env": bs.env.ID})
	swe, _ := measure(map[string]any{"task_id": "textkit-bench"})
	large, _ := measure(map[string]any{"kind": "shell", "env": big.ID})
	b.StopTimer()
	b.ReportMetric(quantile(small, 0.5), "textkit-p50-ms")
	b.ReportMetric(quantile(smallStep, 0.5), "textkit-with-step-p50-ms")
	b.ReportMetric(quantile(swe, 0.5), "textkit-swe-p50-ms")
	b.ReportMetric(quantile(large, 0.5), "files10k-p50-ms")
	b.ReportMetric(quantile(large, 0.5)/quantile(small, 0.5), "ratio")
}

// BenchmarkBranch: b.N branches of a checkpoint taken after a step that
// changed 100 files, against b.N clones of an episode that made the same
// step and took no checkpoint (a clone as it was before checkpoints: its
// upper layer copied) and b.N clones of the checkpointed episode (its
// upper layer empty, its frozen layer shared); interleaved, each closed
// before the next, each followed by its first step, which checks the new
// episode's session and files. Then b.N rollbacks against b.N resets (a
// new episode of the task, as a trainer's reset is), over REST. Each is
// timed once the sandboxes' background work is done (Runtime.Settle):
// what a branch leaves to do (the next branch made ahead) and the reset
// of the sandboxes closed before it.
func BenchmarkBranch(b *testing.B) {
	bs := newBenchServer(b, 0, nil)
	ctx := context.Background()
	c := envclient.New(bs.url, "", nil)
	reset := map[string]any{"task_id": "textkit-bench"}
	id := changed100(b, c, reset)
	defer c.Close(ctx, id)
	plain := changed100(b, c, reset)
	defer c.Close(ctx, plain)
	cp, err := c.Checkpoint(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	cpID := cp["checkpoint_id"].(string)
	var clone, cloneStep, frozen, branch, branchStep, rollback, resets []time.Duration
	for i := 0; i < b.N+1; i++ {
		d, ds := forkAndStep(b, bs, c, func() (envclient.State, error) { return c.Clone(ctx, plain) })
		f, _ := forkAndStep(b, bs, c, func() (envclient.State, error) { return c.Clone(ctx, id) })
		e, es := forkAndStep(b, bs, c, func() (envclient.State, error) { return c.Branch(ctx, id, cpID) })
		if i > 0 { // the first warms the pools
			clone, cloneStep, frozen, branch, branchStep = append(clone, d), append(cloneStep, ds), append(frozen, f), append(branch, e), append(branchStep, es)
		}
	}
	for i := 0; i < b.N+1; i++ {
		bs.settle(b)
		t0 := time.Now()
		if _, err := c.Rollback(ctx, id, cpID); err != nil {
			b.Fatal(err)
		}
		rb := time.Since(t0)
		bs.settle(b)
		t0 = time.Now()
		n, err := c.Create(ctx, reset)
		if err != nil {
			b.Fatal(err)
		}
		rs := time.Since(t0)
		c.Close(ctx, n.EpisodeID)
		if i > 0 {
			rollback, resets = append(rollback, rb), append(resets, rs)
		}
	}
	b.ReportMetric(quantile(clone, 0.5), "clone-p50-ms")
	b.ReportMetric(quantile(frozen, 0.5), "clone-frozen-p50-ms")
	b.ReportMetric(quantile(branch, 0.5), "branch-p50-ms")
	b.ReportMetric(quantile(branch, 0.5)/quantile(clone, 0.5), "branch/clone")
	b.ReportMetric(quantile(branch, 0.5)/quantile(frozen, 0.5), "branch/clone-frozen")
	b.ReportMetric(quantile(branchStep, 0.5)/quantile(cloneStep, 0.5), "branch/clone-with-step")
	b.ReportMetric(quantile(rollback, 0.5), "rollback-p50-ms")
	b.ReportMetric(quantile(resets, 0.5), "reset-p50-ms")
	b.ReportMetric(quantile(rollback, 0.5)/quantile(resets, 0.5), "rollback/reset")
}

// treeMemory sums RSS and PSS over pid and its descendants: this process
// (the server) and every sandbox's processes.
func treeMemory(root int) (rss, pss int64) {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(b), ')'); i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 1 {
				ppid, _ := strconv.Atoi(f[1])
				children[ppid] = append(children[ppid], pid)
			}
		}
	}
	var walk func(int)
	walk = func(pid int) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				switch f[0] {
				case "Rss:":
					rss += kb << 10
				case "Pss:":
					pss += kb << 10
				}
			}
		}
		for _, c := range children[pid] {
			walk(c)
		}
	}
	walk(root)
	return rss, pss
}

// BenchmarkIdleEpisodes: 200 swe episodes open and idle (each a sandbox
// with its bash session, after one step), the memory of the server and
// its sandboxes.
func BenchmarkIdleEpisodes(b *testing.B) {
	const episodes = 200
	bs := newBenchServer(b, 0, nil)
	ctx := context.Background()
	c := envclient.New(bs.url, "", nil)
	var rss, pss int64
	for i := 0; i < b.N; i++ {
		var ids []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for j := 0; j < episodes; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				r, err := c.Create(ctx, map[string]any{"task_id": "textkit-bench"})
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := c.Step(ctx, r.EpisodeID, stepTrue); err != nil {
					b.Error(err)
				}
				mu.Lock()
				ids = append(ids, r.EpisodeID)
				mu.Unlock()
			}()
		}
		wg.Wait()
		runtime.GC()
		time.Sleep(time.Second)
		rss, pss = treeMemory(os.Getpid())
		for _, id := range ids {
			c.Close(ctx, id)
		}
	}
	b.ReportMetric(float64(pss)/(1<<20), "pss-MiB")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
}

// soakState is what must not grow over a soak.
type soakState struct {
	fds, goroutines, mounts, runDirs int
	heap                             uint64
}

func (bs *benchServer) soakState() soakState {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fds, _ := os.ReadDir("/proc/self/fd")
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	run, _ := filepath.Glob(filepath.Join(bs.rtHome, "run", "p*", "*"))
	return soakState{fds: len(fds), goroutines: runtime.NumGoroutine(), mounts: strings.Count(string(mi), "\n"),
		runDirs: len(run), heap: m.HeapInuse}
}

// BenchmarkSoak: b.N reset-step-close cycles over /ws (8 clients at a
// time), the server's descriptors, goroutines, heap, mounts and sandbox
// run directories before and after, each measured once the server has no
// episode and the warm pool has expired.
func BenchmarkSoak(b *testing.B) {
	// Closed sandboxes stay warm for reuse (up to the runtime's Warm, each
	// with a run directory, two descriptors and two goroutines); a short
	// warm idle time lets the measures before and after wait until none
	// is left, so that only a leak remains.
	const warmIdle = 2 * time.Second
	bs := newBenchServer(b, warmIdle, nil)
	ctx := context.Background()
	c := envclient.New(bs.url, "", nil)
	shell := map[string]any{"kind": "shell", "env": bs.env.ID}
	cycle := func() error {
		s, err := c.Dial(ctx, "")
		if err != nil {
			return err
		}
		defer s.Close()
		if _, err := s.Reset(ctx, shell); err != nil {
			return err
		}
		_, err = s.Step(ctx, stepTrue)
		return err
	}
	settle := func() soakState {
		// Closed sandboxes are reset in the background and kept warm (at
		// most the runtime's Warm); wait until the server has no episode.
		waitUntil := time.Now().Add(30 * time.Second)
		for time.Now().Before(waitUntil) {
			bs.srv.mu.Lock()
			n := len(bs.srv.entries) + len(bs.srv.conns)
			bs.srv.mu.Unlock()
			if n == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(3 * warmIdle)
		return bs.soakState()
	}
	for i := 0; i < 200; i++ { // warm up: the pool, the HTTP client's connections
		if err := cycle(); err != nil {
			b.Fatal(err)
		}
	}
	before := settle()
	b.ResetTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	work := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				if err := cycle(); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := 0; i < b.N; i++ {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	secs := time.Since(t0).Seconds()
	b.StopTimer()
	after := settle()
	b.ReportMetric(float64(b.N)/secs, "cycles/s")
	b.ReportMetric(float64(after.fds-before.fds), "fds-growth")
	b.ReportMetric(float64(after.goroutines-before.goroutines), "goroutines-growth")
	b.ReportMetric(float64(after.mounts-before.mounts), "mounts-growth")
	b.ReportMetric(float64(after.runDirs-before.runDirs), "rundirs-growth")
	b.ReportMetric((float64(after.heap)-float64(before.heap))/(1<<20), "heap-growth-MiB")
	b.Logf("before %+v after %+v", before, after)
}
