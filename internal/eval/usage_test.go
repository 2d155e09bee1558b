package eval

import (
	"testing"

	"cwm/internal/errkind"
)

// A mode that does not exist, or that the API cannot carry, is a usage
// error; a problem holding CWM's special tokens is the input's.
func TestPromptErrorKinds(t *testing.T) {
	if _, err := ParseMode("guess"); errkind.Of(err) != errkind.Usage {
		t.Errorf("ParseMode(guess) = %v (kind %v), want a usage error", err, errkind.Of(err))
	}
	p := &Problem{ID: "p", Code: "def f(x):\n    return x\n", Input: "1"}
	if _, err := BuildPrompt(TraceFull, Chat, p); errkind.Of(err) != errkind.Usage {
		t.Errorf("BuildPrompt(trace-full, chat) = %v (kind %v), want a usage error", err, errkind.Of(err))
	}
	if _, err := BuildPrompt(Mode("guess"), Completions, p); errkind.Of(err) != errkind.Usage {
		t.Errorf("BuildPrompt(guess) = %v (kind %v), want a usage error", err, errkind.Of(err))
	}
	bad := &Problem{ID: "q", Code: "def f(x):\n    return '<|frame_sep|>'\n", Input: "1"}
	if _, err := BuildPrompt(TraceFull, Completions, bad); errkind.Of(err) != errkind.Input {
		t.Errorf("BuildPrompt of a problem with a special token = %v (kind %v), want an input error", err, errkind.Of(err))
	}
}
