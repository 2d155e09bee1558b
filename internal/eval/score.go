package eval

import (
	"context"
	"strings"
	"time"

	"cwm/internal/sandbox"
	"cwm/internal/tracer"
)

// Verdict is how one answer was scored.
type Verdict string

const (
	// Pass: `assert OUTPUT == ANSWER` held after the code ran.
	Pass Verdict = "pass"
	// Fail: the assertion failed, or the program raised or did not
	// compile.
	Fail Verdict = "fail"
	// Timeout: the program ran past the scoring timeout (3 s).
	Timeout Verdict = "timeout"
	// CallEchoed: the answer contains the call f(INPUT) itself, which
	// CruxEval rejects without running it.
	CallEchoed Verdict = "call_echoed"
	// FormatError: no answer could be read from the completion (the trace
	// modes).
	FormatError Verdict = "format_error"
)

// ScoreTimeout is CruxEval's timeout of one check (check_correctness's 3 s).
const ScoreTimeout = 3 * time.Second

// Checker scores answers. Scorer is the sandboxed one.
type Checker interface {
	Check(ctx context.Context, p *Problem, answer string) (Verdict, string)
}

// Scorer runs CruxEval's check in warm sandboxes: the code, then
// `assert OUTPUT == ANSWER`, as one module, with a wall-clock limit. It
// runs on the tracer's fork servers, so that a check costs a fork, not a
// Python start. It is safe for concurrent use.
type Scorer struct {
	pool *tracer.Pool
}

// NewScorer starts workers sandboxed Python servers on rt; timeout bounds
// each check (ScoreTimeout when 0).
func NewScorer(ctx context.Context, rt *sandbox.Runtime, workers int, timeout time.Duration) (*Scorer, error) {
	if timeout <= 0 {
		timeout = ScoreTimeout
	}
	pool, err := tracer.NewPool(ctx, rt, tracer.Options{Workers: workers, Timeout: timeout})
	if err != nil {
		return nil, err
	}
	return &Scorer{pool: pool}, nil
}

// Close stops the servers.
func (s *Scorer) Close() error { return s.pool.Close() }

// Program is what CruxEval executes for an answer: the code, a newline and
// the assertion, concatenated as text (so an answer "1, 2" makes the
// assertion's message, as it does in CruxEval).
func Program(p *Problem, answer string) string {
	return p.Code + "\nassert " + p.Output + " == " + answer
}

// Check scores answer as CruxEval's evaluate_score does in output mode:
// an answer that contains the call f(INPUT) is wrong; otherwise Program
// runs, and the answer is right if it ends within the timeout without
// raising. The detail says why an answer failed.
func (s *Scorer) Check(ctx context.Context, p *Problem, answer string) (Verdict, string) {
	if strings.Contains(answer, p.Call()) {
		return CallEchoed, "the answer contains the call " + p.Call()
	}
	return s.Run(ctx, p.ID, Program(p, answer))
}

// Run runs a program as a module: Pass if it ends within the timeout
// without raising.
func (s *Scorer) Run(ctx context.Context, id, program string) (Verdict, string) {
	res := s.pool.Trace(ctx, tracer.Func{ID: id, Code: program, Call: "None"})
	switch res.Status {
	case tracer.OK:
		return Pass, ""
	case tracer.Timeout:
		return Timeout, res.Error
	}
	return Fail, strings.TrimPrefix(res.Error, "module-level code raised ")
}
