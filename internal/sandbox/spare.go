package sandbox

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// Spare branches. A search branches one checkpoint several times (a child
// per candidate action), and over cwm serve a branch's cost is mostly the
// new sandbox's overlay and the start of its bash session, both in the
// sandbox's init, one after the other. So after a checkpoint is branched
// through BranchShell, the next such branch is made at once in the
// background, and kept by the checkpoint: the next BranchShell of the
// same configuration takes it instead of making one, and another is made.
// A spare is a sandbox like any branch: its own fresh upper layer over the
// checkpoint's frozen layers, and a bash session that has run nothing; the
// taker restores the session's state as it would on a new one. It costs
// a sandbox and an idle bash per checkpoint branched (at most the warm
// pool's size of them in a runtime), and the work of one branch done
// ahead, which shares the processors with whatever runs meanwhile.

// spare is a checkpoint's branch made ahead of time.
type spare struct {
	mu     sync.Mutex
	sb     *Sandbox // nil when there is none
	sh     *Shell
	cfg    Config // of the sandbox whose branches it serves
	opts   ShellOptions
	making chan struct{} // closed when the making in flight ends; nil when none is
	closed bool          // the checkpoint was released
}

// takeSpare returns the checkpoint's spare branch if it was made for a
// sandbox of configuration cfg with a session of opts, and is alive.
func (c *Checkpoint) takeSpare(cfg Config, opts ShellOptions) (*Sandbox, *Shell) {
	c.spare.mu.Lock()
	sb, sh := c.spare.sb, c.spare.sh
	match := sb != nil && reflect.DeepEqual(c.spare.cfg, cfg) && reflect.DeepEqual(c.spare.opts, opts)
	if sb != nil {
		c.spare.sb, c.spare.sh = nil, nil
	}
	c.spare.mu.Unlock()
	if sb == nil {
		return nil, nil
	}
	c.rt.spareGone()
	if !match || !sb.alive() {
		sh.Close()
		sb.Close()
		return nil, nil
	}
	return sb, sh
}

// makeSpare starts making a spare branch of the checkpoint for sandboxes
// of s's configuration, unless the checkpoint has one, is making one, was
// released, or the runtime holds as many as its warm pool.
func (c *Checkpoint) makeSpare(s *Sandbox, opts ShellOptions) {
	c.spare.mu.Lock()
	defer c.spare.mu.Unlock()
	if c.spare.closed || c.spare.sb != nil || c.spare.making != nil || !c.rt.spareSlot() {
		return
	}
	cfg, key := s.cfg, s.key
	done := make(chan struct{})
	c.spare.making = done
	c.rt.mu.Lock()
	c.rt.making[done] = true
	c.rt.mu.Unlock()
	go func() {
		defer c.rt.wg.Done()
		defer func() {
			c.rt.mu.Lock()
			delete(c.rt.making, done)
			c.rt.mu.Unlock()
			close(done)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sb, sh, err := c.rt.branchShell(ctx, cfg, key, c, opts)
		c.spare.mu.Lock()
		defer c.spare.mu.Unlock()
		c.spare.making = nil
		if err != nil || c.spare.closed {
			if err == nil {
				sh.Close()
				sb.Close()
			}
			c.rt.spareGone()
			return
		}
		c.spare.sb, c.spare.sh, c.spare.cfg, c.spare.opts = sb, sh, cfg, opts
	}()
}

// dropSpare closes the checkpoint's spare, once one in the making is
// made, and makes no other: the checkpoint is being released.
func (c *Checkpoint) dropSpare() {
	c.spare.mu.Lock()
	c.spare.closed = true
	making := c.spare.making
	sb, sh := c.spare.sb, c.spare.sh
	c.spare.sb, c.spare.sh = nil, nil
	c.spare.mu.Unlock()
	if making != nil {
		<-making // it sees closed, and closes what it made
	}
	if sb != nil {
		sh.Close()
		sb.Close()
		c.rt.spareGone()
	}
}

// spareSlot counts one more spare branch (and its goroutine in rt.wg), if
// the runtime is open and holds fewer than its warm pool's size.
func (rt *Runtime) spareSlot() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed || rt.spares >= rt.warm {
		return false
	}
	rt.spares++
	rt.wg.Add(1)
	return true
}

// spareGone counts one spare branch less.
func (rt *Runtime) spareGone() {
	rt.mu.Lock()
	rt.spares--
	rt.mu.Unlock()
}

// Settle waits until the runtime's background work is done: the resets of
// warm sandboxes, the spare branches in the making, and what each
// sandbox's init left to do after its last swap of overlays (init answers
// a request only after). A benchmark calls it so that what it times next
// does not share the processors with that work.
func (rt *Runtime) Settle(ctx context.Context) error {
	rt.mu.Lock()
	var making []chan struct{}
	for ch := range rt.making {
		making = append(making, ch)
	}
	rt.mu.Unlock()
	if err := waitAll(ctx, making); err != nil {
		return err
	}
	rt.mu.Lock()
	var all []*Sandbox
	var recycled []chan struct{}
	for _, list := range rt.idle {
		for _, s := range list {
			all = append(all, s)
			if s.recycled != nil {
				recycled = append(recycled, s.recycled)
			}
		}
	}
	for s := range rt.live {
		all = append(all, s)
	}
	rt.mu.Unlock()
	if err := waitAll(ctx, recycled); err != nil {
		return err
	}
	for _, s := range all {
		if _, err := s.call(ctx, request{Op: "stat", Path: "/"}); err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// waitAll waits until every channel of chs is closed, or ctx ends.
func waitAll(ctx context.Context, chs []chan struct{}) error {
	for _, ch := range chs {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
