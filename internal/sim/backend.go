package sim

import (
	"context"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"cwm/internal/episode"
	"cwm/internal/errkind"
	"cwm/internal/lazyre"
	"cwm/internal/trajectory"
)

// Observe values: which of a corrected step's two observations the agent
// is shown.
const (
	ObserveSim  = "sim"
	ObserveReal = "real"
)

// Options configure the sim backend of an episode.
type Options struct {
	// World answers the classified commands; nil with RecordOnly.
	World      *WorldModel
	Classifier Classifier
	// RealEvery, when positive, also runs every RealEvery-th simulated
	// command for real (1: every one), recording the pair.
	RealEvery int
	// Observe is what the agent sees of a command that ran both ways:
	// ObserveSim (default) or ObserveReal.
	Observe string
	// RecordOnly is the real backend with contexts recorded: every
	// classified command runs for real, and its record holds the context
	// the sim backend would have sent (for cwm export transitions).
	RecordOnly bool
	// Reward, when set, predicts the episode's reward in place of the
	// real grading (--sim-reward).
	Reward *RewardModel
}

// Check validates the options.
func (o *Options) Check() error {
	switch o.Observe {
	case "", ObserveSim, ObserveReal:
	default:
		return errkind.Errorf(errkind.Usage, "--sim-observe %q: want real or sim", o.Observe)
	}
	if o.RealEvery < 0 {
		return errkind.Errorf(errkind.Usage, "--real-every %d: want 0 (never) or more", o.RealEvery)
	}
	if o.World == nil {
		return errkind.New(errkind.Usage, "the sim backend needs a world model (--sim-model and --sim-base-url)")
	}
	return nil
}

// Summary is the settings part of an episode's SimSummary; Summarize
// adds the totals.
func (o *Options) Summary() *trajectory.SimSummary {
	if o.RecordOnly {
		return &trajectory.SimSummary{Backend: "real"}
	}
	s := &trajectory.SimSummary{Backend: "sim", SimModel: o.World.Model(), RealEvery: o.RealEvery, Observe: o.Observe}
	if s.Observe == "" {
		s.Observe = ObserveSim
	}
	return s
}

// Backend is the sim backend of one episode: an episode.Executor. File
// actions and reading commands run in the session; commands that
// execute code go to the world model, and the session never sees them
// unless a correction or a fallback runs them for real.
type Backend struct {
	opts      *Options
	ep        *episode.Episode
	recent    []trajectory.SimObservation
	simulated int // commands the world model answered, for RealEvery
}

// New returns the sim backend of ep; set it as ep's Exec.
func New(ep *episode.Episode, opts *Options) *Backend {
	return &Backend{opts: opts, ep: ep}
}

// Clone is the backend of ep, a clone of b's episode, with b's history.
func (b *Backend) Clone(ep *episode.Episode) *Backend {
	return &Backend{opts: b.opts, ep: ep, recent: append([]trajectory.SimObservation(nil), b.recent...), simulated: b.simulated}
}

// Bash implements episode.Executor.
func (b *Backend) Bash(ctx context.Context, command string, real func(context.Context, string) (episode.Observation, error)) (episode.Observation, error) {
	kind := b.opts.Classifier.Classify(command)
	if kind == Real {
		obs, err := real(ctx, command)
		b.remember(command, obs)
		return obs, err
	}
	t0 := time.Now()
	rec := &trajectory.Sim{Kind: kind}
	sc, err := BuildContext(ctx, b.ep, command, b.recent)
	if err != nil {
		if ctx.Err() != nil {
			return episode.Observation{}, err
		}
		rec.Fallback = "context"
	}
	rec.Context = sc
	overhead := time.Since(t0)
	var pred *trajectory.Execution
	if sc != nil && !b.opts.RecordOnly {
		pred, err = b.predict(ctx, rec, sc, &overhead)
		if err != nil {
			return episode.Observation{}, err
		}
	}
	if pred != nil {
		rec.Predicted = pred
		b.simulated++
	}
	runReal := pred == nil || (b.opts.RealEvery > 0 && b.simulated%b.opts.RealEvery == 0)
	var obs episode.Observation
	if runReal {
		t1 := time.Now()
		obs, err = real(ctx, command)
		if err != nil {
			return obs, err
		}
		rec.RealSeconds = time.Since(t1).Seconds()
		rec.Real = &trajectory.Execution{Stdout: obs.Text, ExitCode: obs.ExitCode}
		if pred != nil {
			rec.Diverged = Diverged(pred, rec.Real)
		}
	}
	rec.Observed = ObserveReal
	if pred != nil && (!runReal || b.opts.Observe != ObserveReal) {
		obs = episode.Observation{Text: ObservedText(pred), OK: true, ExitCode: pred.ExitCode}
		rec.Observed = ObserveSim
	}
	rec.OverheadSeconds = overhead.Seconds()
	obs.Sim = rec
	b.remember(command, obs)
	return obs, nil
}

// predict asks the world model up to its Attempts times for a valid
// reply, counting each failure's cause in rec. A nil execution means
// none came and the step runs for real.
func (b *Backend) predict(ctx context.Context, rec *trajectory.Sim, sc *trajectory.SimContext, overhead *time.Duration) (*trajectory.Execution, error) {
	t0 := time.Now()
	msgs := Messages(sc)
	*overhead += time.Since(t0)
	for range b.opts.World.cfg.Attempts {
		a := b.opts.World.ask(ctx, msgs)
		if a.err != nil {
			return nil, a.err
		}
		rec.ModelSeconds += a.seconds
		if a.exec != nil {
			t1 := time.Now()
			missing := b.missingFile(ctx, sc.Cwd, a.exec)
			*overhead += time.Since(t1)
			if !missing {
				rec.Fallback = ""
				return a.exec, nil
			}
			a.cause = CauseMissingFile
		}
		if rec.Failures == nil {
			rec.Failures = map[string]int{}
		}
		rec.Failures[a.cause]++
		rec.Fallback = a.cause
	}
	return nil, nil
}

// Files a reply names: traceback frames, pytest's node ids and progress
// lines.
var (
	tracebackFileRe = lazyre.New(`File "([^"<][^"]*\.py)"`)
	pytestFileRe    = lazyre.New(`(?m)^(\S+\.py)(?:::| [.FEsxX]+(?:\s|$))`)
)

// maxCheckedFiles bounds the files of one reply that are looked up.
const maxCheckedFiles = 16

// missingFile reports whether a prediction names a Python file that does
// not exist in the sandbox (outside /tmp, where tests make their own): a
// reply describing a repository that is not there.
func (b *Backend) missingFile(ctx context.Context, cwd string, e *trajectory.Execution) bool {
	text := e.Stdout + "\n" + e.Stderr
	seen := map[string]bool{}
	var names []string
	for _, m := range tracebackFileRe().FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	for _, m := range pytestFileRe().FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	for _, n := range names {
		if seen[n] || strings.HasPrefix(n, "/tmp/") {
			continue
		}
		seen[n] = true
		if len(seen) > maxCheckedFiles {
			break
		}
		found := false
		for _, dir := range []string{cwd, b.ep.RepoRoot()} {
			p := n
			if !path.IsAbs(p) {
				p = path.Join(dir, p)
			}
			if _, err := b.ep.Sandbox().Stat(ctx, p); err == nil {
				found = true
				break
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// remember keeps the last commands for the next context.
func (b *Backend) remember(command string, obs episode.Observation) {
	out := obs.Text
	if len(out) > maxRecentOut {
		out = out[len(out)-maxRecentOut:]
	}
	b.recent = append(b.recent, trajectory.SimObservation{Command: command, Output: out, ExitCode: obs.ExitCode})
	if len(b.recent) > maxRecent {
		b.recent = b.recent[len(b.recent)-maxRecent:]
	}
}

// ObservedText is what the agent sees of a prediction: stdout, then
// stderr on a line of its own, as the session's merged streams read,
// without the final newline and with bytes that are not UTF-8 dropped.
func ObservedText(e *trajectory.Execution) string {
	s := e.Stdout
	if e.Stderr != "" {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		s += e.Stderr
	}
	s = strings.TrimSuffix(s, "\n")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	return s
}

// Summarize is an episode's totals over its steps' records, added to
// the settings in s.
func Summarize(s *trajectory.SimSummary, steps []trajectory.Step) *trajectory.SimSummary {
	for _, st := range steps {
		r := st.Sim
		if r == nil {
			continue
		}
		if r.Predicted != nil && r.Observed == ObserveSim {
			s.Simulated++
		}
		if r.Real != nil {
			s.RealRuns++
		}
		if r.Predicted == nil && r.Fallback != "" {
			s.Fallbacks++
		}
		if r.Diverged {
			s.Divergences++
		}
		for k, n := range r.Failures {
			if s.Failures == nil {
				s.Failures = map[string]int{}
			}
			s.Failures[k] += n
		}
	}
	return s
}
