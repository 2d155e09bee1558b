package sim

import (
	"path"
	"regexp"
	"strings"

	"cwm/internal/lazyre"
)

// Command kinds. A command of kind Real runs in the session as on the
// real backend; the others go to the world model.
const (
	// Real: navigation, reading, searching and git's file views.
	Real = ""
	// KindTest: a test runner (pytest, tox, nox, the task's test command).
	KindTest = "test"
	// KindPython: a Python program other than a test runner.
	KindPython = "python"
	// KindBuild: a build tool or compiler (make, cmake, gcc, go, pip...).
	KindBuild = "build"
	// KindRun: any other program (a script, node, bash of a file).
	KindRun = "run"
)

// readOnly are the programs whose commands run for real: they read the
// repository or change files the way the file tools do, and a world model
// would only guess what the overlay already knows.
var readOnly = map[string]bool{
	"cat": true, "ls": true, "grep": true, "egrep": true, "fgrep": true, "rg": true, "ag": true,
	"find": true, "head": true, "tail": true, "wc": true, "sed": true, "awk": true, "nl": true,
	"echo": true, "printf": true, "pwd": true, "cd": true, "pushd": true, "popd": true, "tree": true,
	"file": true, "stat": true, "diff": true, "cmp": true, "sort": true, "uniq": true, "cut": true,
	"tr": true, "which": true, "type": true, "true": true, "false": true, "test": true, "[": true,
	"[[": true, "less": true, "more": true, "realpath": true, "dirname": true, "basename": true,
	"mkdir": true, "touch": true, "cp": true, "mv": true, "rm": true, "ln": true, "chmod": true,
	"export": true, "unset": true, "set": true, "patch": true, "tee": true,
	"xxd": true, "od": true, "hexdump": true, "md5sum": true, "sha256sum": true, "du": true,
	"df": true, "env": true, "history": true, "clear": true, "exit": true, "git": true,
}

// prefixes are words that run the word after them (after their own
// options or a number, for timeout).
var prefixes = map[string]bool{
	"time": true, "timeout": true, "nohup": true, "nice": true, "command": true, "exec": true,
	"xargs": true, "sudo": true, "then": true, "do": true, "else": true, "elif": true, "if": true,
	"while": true, "until": true, "!": true, "{": true, "}": true, "fi": true, "done": true, "esac": true,
}

// programKinds are the programs that execute code, by kind.
var programKinds = map[string]string{
	"pytest": KindTest, "py.test": KindTest, "tox": KindTest, "nox": KindTest, "unittest": KindTest,
	"make": KindBuild, "cmake": KindBuild, "ninja": KindBuild, "gcc": KindBuild, "g++": KindBuild,
	"cc": KindBuild, "clang": KindBuild, "go": KindBuild, "cargo": KindBuild, "pip": KindBuild,
	"pip3": KindBuild, "mvn": KindBuild, "gradle": KindBuild, "npm": KindBuild, "yarn": KindBuild,
	"uv": KindBuild, "poetry": KindBuild, "meson": KindBuild,
}

var pythonRe = lazyre.New(`^python[0-9.]*$`)

// Classifier decides which bash commands the world model answers. The
// zero Classifier is Classify's rules; Sim and RealRe override them.
type Classifier struct {
	// TestCommand is the task's test command; a command containing it is
	// of kind test.
	TestCommand string
	// SimRe, when set, sends every command it matches to the world model
	// (kind: the rules' kind, or run). RealRe, when set, runs every
	// command it matches for real; it wins over SimRe.
	SimRe, RealRe *regexp.Regexp
}

// Classify is the classifier's kind of command: Real for commands made
// only of reading, navigation, file changes and git; otherwise the kind
// of the first simple command that runs a program, with test before
// python before build before run. The command is split into simple
// commands at unquoted ; & | newlines, parentheses and backquotes;
// heredoc bodies are skipped; each simple command's program is its first
// word after variable assignments, redirections and prefixes such as
// timeout or xargs. sed -i and a git that is not diff, status, log,
// show, grep, ls-files or blame still run for real: they change files the
// way the file tools do, and a simulated command changes nothing.
func (c *Classifier) Classify(command string) string {
	if c.RealRe != nil && c.RealRe.MatchString(command) {
		return Real
	}
	kind := classify(command)
	if c.TestCommand != "" && strings.Contains(command, strings.TrimSpace(c.TestCommand)) {
		kind = KindTest
	}
	if c.SimRe != nil && c.SimRe.MatchString(command) && kind == Real {
		kind = KindRun
	}
	return kind
}

// Classify is the zero Classifier's Classify.
func Classify(command string) string { return (&Classifier{}).Classify(command) }

var kindRank = map[string]int{Real: 0, KindRun: 1, KindBuild: 2, KindPython: 3, KindTest: 4}

func classify(command string) string {
	kind := Real
	for _, words := range simpleCommands(command) {
		if k := programKind(words); kindRank[k] > kindRank[kind] {
			kind = k
		}
	}
	return kind
}

// programKind is the kind of one simple command's program.
func programKind(words []string) string {
	i := 0
	for i < len(words) {
		w := words[i]
		switch {
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "=") && !strings.HasPrefix(w, "-"):
			i++ // an assignment
		case strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "&>"):
			i++
			if w == ">" || w == "<" || w == ">>" || w == "2>" || w == "&>" {
				i++ // the redirection's target
			}
		case prefixes[w]:
			i++
			for i < len(words) && (strings.HasPrefix(words[i], "-") || isNumber(words[i])) {
				i++
			}
		case w == "for" || w == "case" || w == "select" || w == "function" || w == "in":
			return Real // a loop header: its body is another simple command
		default:
			return wordKind(words[i:])
		}
	}
	return Real
}

func wordKind(words []string) string {
	prog := path.Base(words[0])
	args := words[1:]
	switch {
	case pythonRe().MatchString(prog):
		for j, a := range args {
			if a == "-m" && j+1 < len(args) {
				if k := programKinds[args[j+1]]; k == KindTest {
					return KindTest
				}
				if args[j+1] == "pip" {
					return KindBuild
				}
				return KindPython
			}
			if !strings.HasPrefix(a, "-") {
				break
			}
		}
		return KindPython
	case prog == "sed":
		for _, a := range args {
			if strings.HasPrefix(a, "-i") || a == "--in-place" {
				return Real // a file edit
			}
		}
		return Real
	case prog == "git":
		return Real
	case readOnly[prog]:
		return Real
	case programKinds[prog] != "":
		return programKinds[prog]
	}
	return KindRun
}

func isNumber(s string) bool {
	s = strings.TrimRight(s, "smhd")
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// simpleCommands splits a bash command into the words of its simple
// commands, quotes removed, heredoc bodies left out.
func simpleCommands(s string) [][]string {
	var cmds [][]string
	var words []string
	var word strings.Builder
	inWord := false
	var heredocs []string // delimiters whose bodies start at the next line
	flushWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	flushCmd := func() {
		flushWord()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				inWord = true
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j > len(s) {
				j = len(s)
			}
			word.WriteString(s[i+1 : j])
			inWord = true
			i = j
		case ch == '<' && strings.HasPrefix(s[i:], "<<") && !strings.HasPrefix(s[i:], "<<<"):
			flushWord()
			j := i + 2
			if j < len(s) && s[j] == '-' {
				j++
			}
			for j < len(s) && s[j] == ' ' {
				j++
			}
			k := j
			for k < len(s) && !strings.ContainsRune(" \t\n;&|)<>", rune(s[k])) {
				k++
			}
			if delim := strings.Trim(s[j:k], `'"`); delim != "" {
				heredocs = append(heredocs, delim)
			}
			i = k - 1
		case ch == '\n':
			flushCmd()
			for _, d := range heredocs {
				// Skip the body up to the line that is the delimiter.
				for i+1 < len(s) {
					end := strings.IndexByte(s[i+1:], '\n')
					line := s[i+1:]
					if end >= 0 {
						line = s[i+1 : i+1+end]
					}
					if end < 0 {
						i = len(s)
					} else {
						i += end + 1
					}
					if strings.TrimSpace(line) == d {
						break
					}
				}
			}
			heredocs = nil
		case ch == '&' && (i > 0 && s[i-1] == '>' || i+1 < len(s) && s[i+1] == '>'):
			// A redirection (2>&1, &>file), not a separator.
			word.WriteByte(ch)
			inWord = true
		case ch == ';' || ch == '&' || ch == '|' || ch == '(' || ch == ')' || ch == '`':
			flushCmd()
		case ch == '$' && i+1 < len(s) && s[i+1] == '(':
			flushCmd()
			i++
		case ch == ' ' || ch == '\t':
			flushWord()
		case ch == '#' && !inWord:
			// A comment runs to the end of the line.
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	flushCmd()
	return cmds
}
