package episode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"cwm/internal/sandbox"
	"cwm/internal/trajectory"
)

// Observation is what one tool run produced.
type Observation struct {
	// Text is the tool's feedback as CWM phrases it (without framing).
	Text string
	// OK is CWM's ToolCallResult.success: the tool did what was asked.
	OK bool
	// ExitCode is a bash command's status (-1 when the session restarted).
	ExitCode int
	// Restarted is set when the bash session had to be restarted.
	Restarted bool
	// Patch is the exact content of a successfully submitted file.
	Patch string
	// Invalid marks a call the protocol could not run as asked (an
	// unknown tool, malformed arguments); it counts as a format error.
	Invalid bool
	// Sim is the sim backend's record of a bash command it classified
	// (see Executor); the episode loops copy it into the step.
	Sim *trajectory.Sim
}

// Executor answers bash commands in the session's place: the sim backend
// (cwm/internal/sim), which sends commands that execute code to a world
// model and runs the others, through real, in the session.
type Executor interface {
	Bash(ctx context.Context, command string, real func(context.Context, string) (Observation, error)) (Observation, error)
}

// Toolbox runs the agent's tools in one sandbox: a persistent bash session
// plus file tools that resolve relative paths against the session's
// current directory, as CWM's plugins (run inside the session) do.
type Toolbox struct {
	sb      *sandbox.Sandbox
	sh      *sandbox.Shell
	dir     string        // where the session starts
	timeout time.Duration // of one command
	// SubmitFile lets Submit take any non-empty file, not only a diff: a
	// test-generation episode submits its test.
	SubmitFile bool
	// Exec, when set, answers Bash in place of the session.
	Exec Executor
}

// maxSubmitBytes is CWM's session buffer (480 KiB): submitting a larger
// file overflowed it there, and fails here alike.
const maxSubmitBytes = 480 * 1024

// maxReadBytes bounds the files edit and view load into memory.
const maxReadBytes = 64 << 20

// NewToolbox starts the bash session in dir with the given per-command
// timeout. The caller closes the toolbox; the sandbox stays its own.
func NewToolbox(ctx context.Context, sb *sandbox.Sandbox, dir string, timeout time.Duration) (*Toolbox, error) {
	t := &Toolbox{sb: sb, dir: dir, timeout: timeout}
	if err := t.start(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// start starts a fresh bash session in the toolbox's directory.
func (t *Toolbox) start(ctx context.Context) error {
	sh, err := t.sb.Shell(ctx, t.shellOptions())
	if err != nil {
		return fmt.Errorf("start bash session: %w", err)
	}
	t.sh = sh
	return nil
}

// shellOptions are the toolbox's bash session's.
func (t *Toolbox) shellOptions() sandbox.ShellOptions {
	return sandbox.ShellOptions{Timeout: t.timeout, Dir: t.dir, MaxOutput: maxSubmitBytes}
}

// Close ends the bash session.
func (t *Toolbox) Close() error { return t.sh.Close() }

// Sandbox is the sandbox the tools run in.
func (t *Toolbox) Sandbox() *sandbox.Sandbox { return t.sb }

// Bash runs command in the session. A restarted session's feedback is
// CWM's restart message alone, as in CWM (the partial output is dropped).
// Otherwise the feedback is the merged output without its final newline.
func (t *Toolbox) Bash(ctx context.Context, command string) (Observation, error) {
	if t.Exec != nil {
		return t.Exec.Bash(ctx, command, t.bash)
	}
	return t.bash(ctx, command)
}

// bash runs command in the session, whatever Exec says.
func (t *Toolbox) bash(ctx context.Context, command string) (Observation, error) {
	r, err := t.sh.Run(ctx, command, 0)
	if err != nil {
		return Observation{}, fmt.Errorf("run bash command: %w", err)
	}
	if r.Restarted {
		return Observation{Text: r.Message, ExitCode: -1, Restarted: true}, nil
	}
	return Observation{Text: sanitize(r.Output), OK: true, ExitCode: r.ExitCode}, nil
}

// sanitize is what CWM's session does to output: one trailing newline is
// removed, and bytes that are not UTF-8 are dropped (decode with
// errors="ignore").
func sanitize(s string) string {
	s = strings.TrimSuffix(s, "\n")
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "")
}

// cwd is the session's current directory.
func (t *Toolbox) cwd(ctx context.Context) (string, error) {
	r, err := t.sh.Run(ctx, `builtin printf '%s' "$PWD"`, 10*time.Second)
	if err != nil {
		return "", fmt.Errorf("read session directory: %w", err)
	}
	if r.Restarted || !path.IsAbs(r.Output) {
		// The session was in a bad state and is now fresh in its start
		// directory; ask once more.
		r, err = t.sh.Run(ctx, `builtin printf '%s' "$PWD"`, 10*time.Second)
		if err != nil {
			return "", fmt.Errorf("read session directory: %w", err)
		}
	}
	return r.Output, nil
}

// resolve makes p absolute against the session's directory ("" stays "").
func (t *Toolbox) resolve(ctx context.Context, p string) (string, error) {
	if p == "" || path.IsAbs(p) {
		return p, nil
	}
	dir, err := t.cwd(ctx)
	if err != nil {
		return "", err
	}
	return path.Join(dir, p), nil
}

// sandboxErr separates a dead sandbox (an error of the run) from a file
// problem (feedback for the model).
func sandboxErr(err error) error {
	if errors.Is(err, sandbox.ErrDead) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// readText reads a file for edit or view. A non-empty msg is feedback.
func (t *Toolbox) readText(ctx context.Context, shown, abs string) (content, msg string, err error) {
	st, err := t.sb.Stat(ctx, abs)
	if err != nil || abs == "" {
		if e := sandboxErr(err); e != nil {
			return "", "", e
		}
		return "", fmt.Sprintf("The path %s does not exist. Please provide a valid path.", shown), nil
	}
	if st.IsDir {
		return "", fmt.Sprintf("IsADirectoryError: [Errno 21] Is a directory: '%s'", shown), nil
	}
	b, err := t.sb.ReadFile(ctx, abs, maxReadBytes)
	if err != nil {
		if e := sandboxErr(err); e != nil {
			return "", "", e
		}
		return "", fmt.Sprintf("Failed to read %s: %v", shown, errors.Unwrap(err)), nil
	}
	if !utf8.Valid(b) {
		return "", fmt.Sprintf("UnicodeDecodeError: %s is not a UTF-8 text file.", shown), nil
	}
	return textMode(b), "", nil
}

// EditText runs CWM's edit tool on its text input.
func (t *Toolbox) EditText(ctx context.Context, input string) (Observation, error) {
	p, search, replace, msg := parseEdit(input)
	if msg != "" {
		return Observation{Text: msg}, nil
	}
	return t.Edit(ctx, p, search, replace)
}

// Edit replaces the lines search with replace in the file at p.
func (t *Toolbox) Edit(ctx context.Context, p, search, replace string) (Observation, error) {
	abs, err := t.resolve(ctx, p)
	if err != nil {
		return Observation{}, err
	}
	content, msg, err := t.readText(ctx, p, abs)
	if err != nil || msg != "" {
		return Observation{Text: msg}, err
	}
	updated, msg, ok := applyEdit(p, content, search, replace)
	if !ok {
		return Observation{Text: msg}, nil
	}
	if err := t.writeKeepMode(ctx, abs, updated); err != nil {
		if e := sandboxErr(err); e != nil {
			return Observation{}, e
		}
		return Observation{Text: fmt.Sprintf("Failed to write %s: %v", p, errors.Unwrap(err))}, nil
	}
	return Observation{Text: msg, OK: true}, nil
}

// writeKeepMode rewrites a file in place, keeping its permissions as
// Python's open(path, "w") does.
func (t *Toolbox) writeKeepMode(ctx context.Context, abs, content string) error {
	mode := fs.FileMode(0o644)
	if st, err := t.sb.Stat(ctx, abs); err == nil {
		mode = st.Mode
	}
	return t.sb.WriteFile(ctx, abs, []byte(content), mode)
}

// CreateText runs CWM's create tool on its text input.
func (t *Toolbox) CreateText(ctx context.Context, input string) (Observation, error) {
	p, content := parseCreate(input)
	return t.Create(ctx, p, content)
}

// Create makes a new file at p holding content.
func (t *Toolbox) Create(ctx context.Context, p, content string) (Observation, error) {
	abs, err := t.resolve(ctx, p)
	if err != nil {
		return Observation{}, err
	}
	if p != "" {
		if _, err := t.sb.Stat(ctx, abs); err == nil {
			return Observation{Text: fmt.Sprintf("%s already exists. Cannot create a new file at an existing path.", p)}, nil
		} else if e := sandboxErr(err); e != nil {
			return Observation{}, e
		}
	}
	if p == "" {
		return Observation{Text: "Path is empty. Please provide a valid path."}, nil
	}
	parent := path.Dir(abs)
	if _, err := t.sb.Stat(ctx, parent); err != nil {
		if e := sandboxErr(err); e != nil {
			return Observation{}, e
		}
		return Observation{Text: fmt.Sprintf("File creation failed. The parent directory %s does not exist.", parent)}, nil
	}
	if err := t.sb.WriteFile(ctx, abs, []byte(content), 0o644); err != nil {
		if e := sandboxErr(err); e != nil {
			return Observation{}, e
		}
		return Observation{Text: fmt.Sprintf("File creation failed. %v", errors.Unwrap(err))}, nil
	}
	return Observation{Text: createdMessage(p, content), OK: true}, nil
}

// Submit marks the patch file at p as the submission. The feedback is the
// content as CWM's `cat` through the session returned it (without its
// final newline); Patch keeps the exact bytes.
func (t *Toolbox) Submit(ctx context.Context, p string) (Observation, error) {
	fail := func(why string) (Observation, error) {
		return Observation{Text: fmt.Sprintf("Failed to submit %s. %s", p, why)}, nil
	}
	abs, err := t.resolve(ctx, p)
	if err != nil {
		return Observation{}, err
	}
	b, err := t.sb.ReadFile(ctx, abs, maxSubmitBytes)
	if err != nil {
		if e := sandboxErr(err); e != nil {
			return Observation{}, e
		}
		return fail("Make sure it exists and is readable.")
	}
	text := sanitize(string(b))
	if strings.TrimSpace(text) == "" {
		return fail("It is an empty file.")
	}
	if !t.SubmitFile && !strings.HasPrefix(text, "diff") {
		return fail("It is not a valid diff file.")
	}
	return Observation{Text: text, OK: true, Patch: string(b)}, nil
}

// View shows lines start..end (1-based, inclusive; 0 means the file's
// first or last line) of the file at p, numbered like the edit snippet.
func (t *Toolbox) View(ctx context.Context, p string, start, end int) (Observation, error) {
	abs, err := t.resolve(ctx, p)
	if err != nil {
		return Observation{}, err
	}
	content, msg, err := t.readText(ctx, p, abs)
	if err != nil || msg != "" {
		return Observation{Text: msg}, err
	}
	n := strings.Count(content, "\n") + 1
	if start <= 0 {
		start = 1
	}
	if end <= 0 || end > n {
		end = n
	}
	if start > end {
		return Observation{Text: fmt.Sprintf("Invalid line range [%d, %d]: %s has %d lines.", start, end, p, n)}, nil
	}
	return Observation{Text: numberLines(content, start, end), OK: true}, nil
}
