package eval

import (
	"strings"
	"unicode"
)

// pyStrip is Python's str.strip() without arguments, which CruxEval's
// postprocessing applies to every answer. It removes what str.isspace()
// holds for: Go's unicode.IsSpace set and the four separators U+001C to
// U+001F, which Python counts as whitespace (their bidirectional class is
// B or S) and strings.TrimSpace does not; an answer ending in U+001C
// passes in CruxEval.
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }
