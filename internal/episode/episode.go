// Package episode is a task's sandbox made ready for an agent, and the SWE
// tools it acts through, with no model involved: what an environment
// server serves and what cwm/internal/agent's loop drives.
//
// Start plants the task's bug in the repository so that git cannot show it
// (CWM-SPEC 2.2) and leaves the hidden tests (the task's test_patch) out.
// The tools are CWM's: a persistent bash session, edit, create and submit,
// and view for function calling; edit, create, submit and view run in Go
// on the sandbox's file API, with CWM's messages. Diff is the repository's
// change since the start, new files included; Reset returns to the start,
// and Clone branches the episode as it is, files and session state.
package episode

import (
	"context"
	"fmt"
	"time"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// Options configure an episode. Zero fields take the defaults in
// parentheses.
type Options struct {
	// History is how the bug is folded into git (HistorySquash).
	History History
	// CommandTimeout bounds one bash command (CWM's 120 s).
	CommandTimeout time.Duration
	// RepoRoot is the repository inside the sandbox (env.RepoRoot); the
	// bash session starts there.
	RepoRoot string
}

// DefaultCommandTimeout is CWM's limit of one bash command.
const DefaultCommandTimeout = 120 * time.Second

// setupTimeout bounds preparing the repository and taking the diff; gc of
// a large repository takes a while.
const setupTimeout = 10 * time.Minute

// Episode is a task's sandbox, prepared, with the tools on it. Its tools
// (the embedded Toolbox) may be called from one goroutine at a time.
type Episode struct {
	*Toolbox
	task *task.Task
	opts Options
	base string // the commit the episode starts from
}

// Start prepares sb, a sandbox on t's environment, for an episode of t:
// an imported task's repository is put at its base_commit and its hidden
// tests removed, t's bug is planted and folded into git's history (opts.History), every
// trace of where the repository came from is removed, and the bash
// session starts in the repository. The episode owns sb from then on: its
// Close closes it. An error (a bug patch that does not apply, a sandbox
// that died) leaves sb to the caller.
func Start(ctx context.Context, sb *sandbox.Sandbox, t *task.Task, opts Options) (*Episode, error) {
	if opts.History == "" {
		opts.History = HistorySquash
	}
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = DefaultCommandTimeout
	}
	if opts.RepoRoot == "" {
		opts.RepoRoot = env.RepoRoot
	}
	if err := prepareImported(ctx, sb, opts.RepoRoot, t, setupTimeout); err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	base, err := prepareRepo(ctx, sb, opts.RepoRoot, t.BugPatch, opts.History, setupTimeout)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	tb, err := NewToolbox(ctx, sb, opts.RepoRoot, opts.CommandTimeout)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.InstanceID, err)
	}
	return &Episode{Toolbox: tb, task: t, opts: opts, base: base}, nil
}

// Task is the episode's task.
func (e *Episode) Task() *task.Task { return e.task }

// RepoRoot is where the repository is inside the sandbox.
func (e *Episode) RepoRoot() string { return e.opts.RepoRoot }

// Base is the commit the episode started from: the buggy tree.
func (e *Episode) Base() string { return e.base }

// Diff is the repository's change since Base, new files included: what the
// agent did, whether or not it submitted. A diff over 32 MiB is an error
// of kind errkind.Limit.
func (e *Episode) Diff(ctx context.Context) (string, error) {
	return finalDiff(ctx, e.sb, e.opts.RepoRoot, e.base, setupTimeout)
}

// Reset brings the episode back to its start: every command is killed,
// what was written is dropped, the bug is planted again (giving the same
// commit) and a fresh bash session starts in the repository.
func (e *Episode) Reset(ctx context.Context) error {
	e.sh.Close()
	if err := e.sb.Reset(ctx); err != nil {
		return fmt.Errorf("reset the sandbox of task %s: %w", e.task.InstanceID, err)
	}
	if err := prepareImported(ctx, e.sb, e.opts.RepoRoot, e.task, setupTimeout); err != nil {
		return fmt.Errorf("task %s: %w", e.task.InstanceID, err)
	}
	base, err := prepareRepo(ctx, e.sb, e.opts.RepoRoot, e.task.BugPatch, e.opts.History, setupTimeout)
	if err != nil {
		return fmt.Errorf("task %s: %w", e.task.InstanceID, err)
	}
	e.base = base
	return e.start(ctx)
}

// Clone branches the episode: a new episode whose sandbox starts as a copy
// of this one's files as they are now, and whose bash session is in the
// same directory with the same exported variables (Session; running
// processes are not copied). Either can go on without the other seeing it.
func (e *Episode) Clone(ctx context.Context) (*Episode, error) {
	tb, err := e.Toolbox.Branch(ctx)
	if err != nil {
		return nil, fmt.Errorf("clone the episode of task %s: %w", e.task.InstanceID, err)
	}
	return &Episode{Toolbox: tb, task: e.task, opts: e.opts, base: e.base}, nil
}

// Fork is Clone with the session state s (the zero Session: a fresh
// session in the repository). It only reads e's files, so one episode
// left at its start can be forked by many goroutines at once: a prepared
// task that every reset copies.
func (e *Episode) Fork(ctx context.Context, s Session) (*Episode, error) {
	tb, err := e.Toolbox.Fork(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("clone the episode of task %s: %w", e.task.InstanceID, err)
	}
	return &Episode{Toolbox: tb, task: e.task, opts: e.opts, base: e.base}, nil
}

// Close ends the session and closes the sandbox.
func (e *Episode) Close() error {
	e.sh.Close()
	return e.sb.Close()
}
