package tracer

import (
	"hash/fnv"
	"math/rand/v2"
	"strings"

	"cwm/internal/trace"
)

// EpisodeOptions configure Cut (CWM-SPEC 1.5: "function-level episodes are
// cut out of the raw test trace with a configurable stack depth and a
// stochastic step-in probability").
type EpisodeOptions struct {
	// MaxDepth is the deepest callee inlined into an episode, the root
	// being depth 0; 0 inlines nothing.
	MaxDepth int
	// StepIn is the probability that a callee within MaxDepth is inlined
	// (its frames are part of the caller's episode) rather than stepped
	// over (it becomes an episode of its own).
	StepIn float64
	// Seed makes the choices reproducible: the same seed, test and
	// recording give the same episodes.
	Seed int64
	// Caps bound an episode (TraceCaps; MaxRepr is the recording's, not
	// the episode's): past MaxEvents or MaxBytes it is too_long, with the
	// frames up to the cap.
	Caps
	// Context is what an episode's context holds: ContextDefs (trace
	// repo's default) or ContextModule (Cut's, when empty: trace tests'
	// plain text reads the files' line numbers from it).
	Context string
	// Root is the repository's directory in the sandbox (/repo): code
	// files are named relative to it.
	Root string
	// Source returns the content of a repository file, by its name
	// relative to Root.
	Source func(rel string) ([]byte, error)
}

// Episode is a function-level trace cut from a test's recording: the call
// of one repository function, with the calls it made either inlined or
// stepped over. Like Result, every field is always written.
type Episode struct {
	// ID is the test id, "#", and the ordinal of the root call among the
	// calls of the test's recording.
	ID   string `json:"id"`
	Test string `json:"test"`
	// Function is the root's code (file relative to the repository).
	Function Code   `json:"function"`
	Status   Status `json:"status"`
	Context  string `json:"context"`
	// Codes are the code objects of the frames (Frame.Code indexes them).
	Codes  []Code  `json:"codes"`
	Frames []Frame `json:"frames"`
	// Text is the complete CWM text (ok and exception only).
	Text string `json:"text"`
	// Output is the value text the function returned, or the exception
	// it raised.
	Output string       `json:"output"`
	Error  string       `json:"error"`
	Stats  EpisodeStats `json:"stats"`
	// dropped is the cap that made the episode too_long, "" when none
	// did: trace repo writes its line without the trace and counts it.
	dropped DropReason
}

// DropReason is why an episode's trace is not in the output: the caps of
// one episode (its line is written without context, frames or text), the
// cap per function and the run's total caps (no line at all).
type DropReason string

const (
	DropEvents      DropReason = "event_cap"
	DropBytes       DropReason = "byte_cap"
	DropPerFunction DropReason = "function_cap"
	DropTotal       DropReason = "total_cap"
)

// EpisodeStats are the measurements of an episode.
type EpisodeStats struct {
	Frames     int `json:"frames"`
	LineEvents int `json:"line_events"`
	Bytes      int `json:"bytes"`
	// Depth is the deepest inlined frame, relative to the root.
	Depth int `json:"depth"`
	// TestEpisodes is how many episodes the test's recording gave (a
	// resumed run re-traces a test with fewer lines than this).
	TestEpisodes int `json:"test_episodes"`
}

// Nothing in an Episode depends on time or on the machine: the same
// recording, options and seed give the same bytes.

// call is one call of an in-scope code object in a recording: its frames
// run from start to end (its return frame; -1 when recording stopped
// inside it).
type call struct {
	start, end int
	code       int
	depth      int
	ordinal    int
	children   []*call
}

// Cut cuts t into episodes. Every call of a repository function is a
// candidate root: a callee within opts.MaxDepth of the root is inlined with
// probability opts.StepIn, otherwise it is stepped over (its frames are
// left out; the caller's next frame follows its call line) and becomes a
// candidate root itself. A call that cannot start a trace (a lambda, a
// comprehension, a generator resuming, a class body) is never a root: its
// calls are candidates instead. Problems of single episodes are statuses.
func Cut(t *RawTest, opts EpisodeOptions) []Episode {
	opts.Caps = opts.Caps.or(TraceCaps)
	if opts.Root == "" {
		opts.Root = "/repo"
	}
	if opts.Context == "" {
		opts.Context = ContextModule
	}
	roots, depth := callTree(t.frames)
	h := fnv.New64a()
	h.Write([]byte(t.Test))
	c := &cutter{t: t, opts: opts, depth: depth, src: newSources(opts),
		rng: rand.New(rand.NewPCG(uint64(opts.Seed), h.Sum64()))}
	for _, r := range roots {
		c.process(r)
	}
	out := make([]Episode, len(c.episodes))
	for i, b := range c.episodes {
		out[i] = c.build(b)
		out[i].Stats.TestEpisodes = len(c.episodes)
	}
	return out
}

// callTree returns the top-level calls of frames and each frame's depth.
func callTree(frames []wireFrame) ([]*call, []int) {
	var roots, stack []*call
	depth := make([]int, len(frames))
	ordinal := 0
	for i, f := range frames {
		switch f.event {
		case trace.Call:
			c := &call{start: i, end: -1, code: f.code, depth: len(stack), ordinal: ordinal}
			ordinal++
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, c)
			} else {
				roots = append(roots, c)
			}
			stack = append(stack, c)
			depth[i] = c.depth
		case trace.Return:
			depth[i] = len(stack) - 1
			if len(stack) > 0 {
				stack[len(stack)-1].end = i
				stack = stack[:len(stack)-1]
			}
		default:
			depth[i] = len(stack) - 1
		}
	}
	return roots, depth
}

type cutter struct {
	t        *RawTest
	opts     EpisodeOptions
	depth    []int
	src      *sources
	rng      *rand.Rand
	episodes []*cutting
}

// cutting is an episode being cut: its root and the recording's frames it
// keeps, in order.
type cutting struct {
	root     *call
	frames   []int
	maxDepth int
}

func (c *cutter) process(n *call) {
	if c.rootable(n) {
		b := &cutting{root: n}
		c.episodes = append(c.episodes, b)
		c.include(n, 0, b)
		return
	}
	for _, ch := range n.children {
		c.process(ch)
	}
}

// include adds the frames of n, at depth d of episode b, and decides for
// each of its calls.
func (c *cutter) include(n *call, d int, b *cutting) {
	b.maxDepth = max(b.maxDepth, d)
	last := n.end
	if last < 0 {
		last = len(c.t.frames) - 1
	}
	i := n.start
	for _, ch := range n.children {
		b.frames = appendRange(b.frames, i, ch.start-1)
		if d+1 <= c.opts.MaxDepth && c.rng.Float64() < c.opts.StepIn {
			c.include(ch, d+1, b)
		} else {
			c.process(ch)
		}
		if ch.end < 0 {
			return // recording stopped inside ch
		}
		i = ch.end + 1
	}
	b.frames = appendRange(b.frames, i, last)
}

func appendRange(s []int, from, to int) []int {
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// rootable reports whether n can start a trace: a def function, called
// afresh (a resumed generator's call is at its yield), whose def line is
// found in its file.
func (c *cutter) rootable(n *call) bool {
	code := c.t.Codes[n.code]
	name := code.Qualname[strings.LastIndexByte(code.Qualname, '.')+1:]
	if strings.HasPrefix(name, "<") || c.t.frames[n.start].lineno != code.Firstlineno {
		return false
	}
	_, ok := c.src.defLine(code)
	return ok
}
