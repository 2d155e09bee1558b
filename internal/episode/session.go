package episode

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cwm/internal/sandbox"
)

// Session is what a branch of an episode carries over of its bash
// session: the directory the session is in and the variables it exported.
// Running processes, unexported variables, functions and aliases stay
// behind. The zero Session is a fresh session in the start directory.
type Session struct {
	// Dir is the session's current directory.
	Dir string `json:"dir,omitempty"`
	// Exports is `export -p` of the session: one `declare -x` line per
	// exported variable, which bash reads back as it printed them.
	Exports string `json:"exports,omitempty"`
}

// sessionTimeout bounds reading or restoring a session's state: builtins
// only, so a session that takes longer is wedged.
const sessionTimeout = 10 * time.Second

// Session reads the state of the toolbox's bash session. A session that
// had to be restarted to answer is fresh, and its state the zero Session.
func (t *Toolbox) Session(ctx context.Context) (Session, error) {
	r, err := t.sh.Run(ctx, `builtin printf '%s\0' "$PWD"; builtin export -p`, sessionTimeout)
	if err != nil {
		return Session{}, fmt.Errorf("read session state: %w", err)
	}
	if r.Restarted || r.ExitCode != 0 {
		return Session{}, nil
	}
	dir, exports, ok := strings.Cut(r.Output, "\x00")
	if !ok {
		return Session{}, nil
	}
	return Session{Dir: dir, Exports: exports}, nil
}

// Restore brings the toolbox's session to s: its variables exported as s
// has them, then its directory. Variables the session has that s lacks
// are left alone; a restored variable that is read-only in the new
// session keeps its value. The state is queued, not waited for: bash sets
// it up before the session's next command, so a branch's restore costs no
// round trip of its own.
func (t *Toolbox) Restore(s Session) error {
	if s == (Session{}) {
		return nil
	}
	var cmd strings.Builder
	cmd.WriteString(s.Exports)
	if s.Dir != "" {
		cmd.WriteString("\nbuiltin cd -- " + singleQuote(s.Dir))
	}
	if err := t.sh.Queue(cmd.String()); err != nil {
		return fmt.Errorf("restore session state: %w", err)
	}
	return nil
}

// Fork returns a toolbox on a copy of t's sandbox as it is now, its
// session restored to s (the zero Session: a fresh session in the
// toolbox's start directory). t goes on unchanged; the two are
// independent afterwards.
func (t *Toolbox) Fork(ctx context.Context, s Session) (*Toolbox, error) {
	sb, err := t.sb.Clone(ctx)
	if err != nil {
		return nil, fmt.Errorf("clone sandbox: %w", err)
	}
	return t.forkOnto(ctx, sb, s)
}

// Branch is Fork with t's own session state, which it reads while the
// sandbox is copied: reading it runs builtins only and writes no file.
func (t *Toolbox) Branch(ctx context.Context) (*Toolbox, error) {
	type cloned struct {
		sb  *sandbox.Sandbox
		err error
	}
	ch := make(chan cloned, 1)
	go func() {
		sb, err := t.sb.Clone(ctx)
		ch <- cloned{sb, err}
	}()
	s, serr := t.Session(ctx)
	c := <-ch
	if c.err != nil {
		return nil, fmt.Errorf("clone sandbox: %w", c.err)
	}
	if serr != nil {
		c.sb.Close()
		return nil, serr
	}
	return t.forkOnto(ctx, c.sb, s)
}

// forkOnto starts a toolbox like t on sb, the copy of t's sandbox, with
// its session restored to s. It closes sb when it fails.
func (t *Toolbox) forkOnto(ctx context.Context, sb *sandbox.Sandbox, s Session) (*Toolbox, error) {
	sh, err := sb.Shell(ctx, t.shellOptions())
	if err != nil {
		sb.Close()
		return nil, fmt.Errorf("start bash session: %w", err)
	}
	return t.onto(sb, sh, s)
}

// onto is a toolbox like t on sb, the copy of t's sandbox, with the bash
// session sh started there, restored to s. It closes both when it fails.
func (t *Toolbox) onto(sb *sandbox.Sandbox, sh *sandbox.Shell, s Session) (*Toolbox, error) {
	nt := &Toolbox{sb: sb, sh: sh, dir: t.dir, timeout: t.timeout}
	if err := nt.Restore(s); err != nil {
		nt.Close()
		sb.Close()
		return nil, err
	}
	return nt, nil
}

// singleQuote quotes s for bash: every byte but the quote itself is
// literal between single quotes.
func singleQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
