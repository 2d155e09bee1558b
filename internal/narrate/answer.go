package narrate

import (
	"strings"

	"cwm/internal/eval"
	"cwm/internal/lazyre"
)

// answer is what a narration's last [ANSWER] block predicts: a value (the
// text after "==") or an exception's type (the name after "raises").
type answer struct {
	value, raises string
}

// raisesForm is the exception form's body: "CALL raises NAME".
var raisesForm = lazyre.New(`(?s)^\s*(.*\S)\s+raises\s+([A-Za-z_][A-Za-z0-9_.]*)\s*$`)

// parseAnswer reads the prediction from the narration's last [ANSWER]
// block (a server told to stop at [/ANSWER] leaves the closing tag out,
// so it may be missing). A value is read as CruxEval's postprocessing
// reads an answer (eval.ExtractAnswer, chain-of-thought mode): what lies
// between the first and the second "==", stripped. ok is false when the
// block is missing, empty, or in neither form.
func parseAnswer(narration string) (a answer, ok bool) {
	i := strings.LastIndex(narration, "[ANSWER]")
	if i < 0 {
		return a, false
	}
	block := narration[i:]
	body, _, _ := strings.Cut(block[len("[ANSWER]"):], "[/ANSWER]")
	if strings.Contains(body, "==") {
		a.value = eval.ExtractAnswer(eval.DirectCoT, block).Answer
		return a, a.value != ""
	}
	if m := raisesForm().FindStringSubmatch(body); m != nil {
		a.raises = m[2]
		return a, true
	}
	return a, false
}

// exceptionType is the class name of a raised exception's value text
// ("ValueError('substring not found')" is ValueError), "" when the text is
// not of that shape.
func exceptionType(output string) string {
	name, _, ok := strings.Cut(output, "(")
	if !ok || name == "" || strings.ContainsAny(name, " \n'\"") {
		return ""
	}
	return lastDotted(name)
}

// lastDotted is a dotted name's last part: a narration may qualify the
// type (json.decoder.JSONDecodeError) where the value text does not.
func lastDotted(name string) string {
	return name[strings.LastIndex(name, ".")+1:]
}
