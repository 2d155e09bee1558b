package narrate

import (
	"context"
	"strings"

	"cwm/internal/eval"
	"cwm/internal/traceline"
)

// verdict is the consistency filter: it reads l.Narration's answer into
// l and says whether it agrees with the traced call. A value is checked
// by CruxEval's check (eval.Scorer: the code, then `assert CALL ==
// PREDICTED`, run in the sandbox), the call standing where CruxEval puts
// the true output: it holds against the call itself. An exception is
// compared by its type's name with the one the trace raised, in Go.
func verdict(ctx context.Context, sc *eval.Scorer, t *Trace, code string, l *Line) (reason, detail string) {
	a, ok := parseAnswer(l.Narration)
	if !ok {
		return NoAnswer, "no last [ANSWER] CALL == VALUE [/ANSWER] or [ANSWER] CALL raises TYPE [/ANSWER]"
	}
	l.Predicted, l.Raises = a.value, a.raises
	raised := traceline.Status(t.Status) == traceline.Exception
	switch {
	case a.raises != "" && !raised:
		return UnexpectedException, "predicted " + a.raises + "; the call returned " + t.Output
	case a.raises != "":
		got := exceptionType(t.Output)
		if lastDotted(a.raises) != got {
			return WrongException, "predicted " + a.raises + "; the call raised " + t.Output
		}
		return Consistent, ""
	case raised:
		return MissedException, "predicted a value; the call raised " + t.Output
	}
	p := eval.Problem{ID: t.ID, Code: code, Input: t.Input, Output: t.Call}
	var v eval.Verdict
	if p.Call() == t.Call {
		v, detail = sc.Check(ctx, &p, a.value)
	} else if strings.Contains(a.value, t.Call) {
		// Check's rule for a call that is not f(INPUT).
		v, detail = eval.CallEchoed, "the answer contains the call "+t.Call
	} else {
		v, detail = sc.Run(ctx, t.ID, eval.Program(&p, a.value))
	}
	switch v {
	case eval.Pass:
		return Consistent, ""
	case eval.CallEchoed:
		return CallEchoed, detail
	case eval.Timeout:
		return CheckTimeout, detail
	}
	return WrongAnswer, detail
}
