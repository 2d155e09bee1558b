package episode

import (
	"context"
	"fmt"

	"cwm/internal/sandbox"
)

// Checkpoint is a state of a toolbox to roll back or branch to: its
// sandbox's files (frozen layers, sandbox.Checkpoint) and its bash
// session's state (Session). It holds the layers until Release.
type Checkpoint struct {
	files   *sandbox.Checkpoint
	session Session
}

// Depth is how many frozen layers the checkpoint stands on.
func (c *Checkpoint) Depth() int { return c.files.Depth() }

// Bytes is the memory its layers take (shared with checkpoints that stand
// on the same layers: see Layers).
func (c *Checkpoint) Bytes() int64 { return c.files.Bytes() }

// Layers names its frozen layers, topmost first.
func (c *Checkpoint) Layers() []string { return c.files.Layers() }

// LayerBytes is the memory each of its layers takes, in Layers' order.
func (c *Checkpoint) LayerBytes() []int64 { return c.files.LayerBytes() }

// Release lets go of the checkpoint's layers. It is idempotent.
func (c *Checkpoint) Release() { c.files.Release() }

// Checkpoint freezes the toolbox's files and records its session's state.
// Freezing kills the sandbox's commands, so the session restarts with its
// state restored, as after Branch: running processes do not survive it.
func (t *Toolbox) Checkpoint(ctx context.Context) (*Checkpoint, error) {
	s, err := t.Session(ctx)
	if err != nil {
		return nil, err
	}
	files, err := t.sb.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{files: files, session: s}
	if err := t.restart(ctx, s); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

// Rollback brings the toolbox back to the checkpoint: its files as they
// were, and a fresh session with the checkpoint's state. The checkpoint
// stays valid.
func (t *Toolbox) Rollback(ctx context.Context, c *Checkpoint) error {
	if err := t.sb.Rollback(ctx, c.files); err != nil {
		return err
	}
	return t.restart(ctx, c.session)
}

// BranchFrom returns a toolbox on a new sandbox whose files are the
// checkpoint's (sharing its frozen layers, nothing copied), its session
// restored to the checkpoint's state. t goes on unchanged.
// The bash session starts with the sandbox (sandbox.BranchShell), which
// spares the branch a round trip to the sandbox's init.
func (t *Toolbox) BranchFrom(ctx context.Context, c *Checkpoint) (*Toolbox, error) {
	sb, sh, err := t.sb.BranchShell(ctx, c.files, t.shellOptions())
	if err != nil {
		return nil, fmt.Errorf("branch sandbox: %w", err)
	}
	return t.onto(sb, sh, c.session)
}

// restart replaces the toolbox's bash session, whose processes a freeze
// or rollback killed, by a fresh one in state s.
func (t *Toolbox) restart(ctx context.Context, s Session) error {
	t.sh.Close()
	if err := t.start(ctx); err != nil {
		return err
	}
	return t.Restore(s)
}

// BranchFrom is Toolbox.BranchFrom for an episode: a new episode of the
// same task from the checkpoint.
func (e *Episode) BranchFrom(ctx context.Context, c *Checkpoint) (*Episode, error) {
	tb, err := e.Toolbox.BranchFrom(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("branch the episode of task %s: %w", e.task.InstanceID, err)
	}
	return &Episode{Toolbox: tb, task: e.task, opts: e.opts, base: e.base}, nil
}
