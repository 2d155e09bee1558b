package envserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"cwm/internal/env"
	"cwm/internal/episode"
	"cwm/internal/task"
)

// templates keeps tasks prepared: a sandbox per task with its bug planted
// and git's history folded (episode.Start, a dozen git commands), so that
// a reset is a copy of its writes (episode.Fork) rather than a new set-up.
// The least recently used beyond max are closed.
type templates struct {
	sbs     *env.Sandboxes
	max     int
	timeout time.Duration
	history episode.History

	mu     sync.Mutex // guards m and the fields of its entries
	m      map[string]*template
	closed bool
	// evicting counts the evicted templates still closing (off the lock:
	// a close takes a sandbox's teardown); close waits for them, so that
	// Server.Close returns with every sandbox of the server closed.
	evicting sync.WaitGroup
}

// template is one prepared task; ready closes once ep or err is set.
type template struct {
	ready chan struct{}
	ep    *episode.Episode
	err   error
	users int
	used  time.Time
}

func newTemplates(sbs *env.Sandboxes, max int, timeout time.Duration, h episode.History) *templates {
	return &templates{sbs: sbs, max: max, timeout: timeout, history: h, m: map[string]*template{}}
}

// key identifies what a template is: the task, its environment and its
// bug (an inline task may reuse an id with another bug).
func templateKey(e *env.Env, t *task.Task) string {
	h := sha256.Sum256([]byte(t.BugPatch))
	return t.InstanceID + "\x00" + e.ID + "\x00" + hex.EncodeToString(h[:8])
}

// fork returns a new episode of t, a copy of its prepared sandbox,
// preparing it first if no reset of t is kept.
func (ts *templates) fork(ctx context.Context, e *env.Env, t *task.Task) (*episode.Episode, error) {
	key := templateKey(e, t)
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		return nil, errDraining
	}
	tp := ts.m[key]
	first := tp == nil
	if first {
		tp = &template{ready: make(chan struct{})}
		ts.m[key] = tp
	}
	tp.users++
	ts.mu.Unlock()
	defer func() {
		ts.mu.Lock()
		tp.users--
		tp.used = time.Now()
		ts.evictLocked()
		ts.mu.Unlock()
	}()
	if first {
		ep, err := ts.prepare(context.WithoutCancel(ctx), e, t)
		ts.mu.Lock()
		tp.ep, tp.err = ep, err
		if err != nil {
			delete(ts.m, key) // the next reset tries again
		}
		ts.mu.Unlock()
		close(tp.ready)
	}
	select {
	case <-tp.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if tp.err != nil {
		return nil, tp.err
	}
	return tp.ep.Fork(ctx, episode.Session{})
}

// prepare starts t's episode on a fresh sandbox; its session is closed,
// as forks start their own.
func (ts *templates) prepare(ctx context.Context, e *env.Env, t *task.Task) (*episode.Episode, error) {
	sb, err := ts.sbs.Open(ctx, e)
	if err != nil {
		return nil, err
	}
	ep, err := episode.Start(ctx, sb, t, episode.Options{History: ts.history, CommandTimeout: ts.timeout, RepoRoot: e.RepoDir()})
	if err != nil {
		sb.Close()
		return nil, fmt.Errorf("prepare task %s: %w", t.InstanceID, err)
	}
	ep.Toolbox.Close()
	return ep, nil
}

// evictLocked closes the least recently used templates past max that no
// reset is forking.
func (ts *templates) evictLocked() {
	if ts.closed {
		return // close has taken the templates (and waits for evicting)
	}
	for len(ts.m) > ts.max {
		var oldKey string
		var old *template
		for k, tp := range ts.m {
			if tp.users > 0 || tp.ep == nil {
				continue
			}
			if old == nil || tp.used.Before(old.used) {
				oldKey, old = k, tp
			}
		}
		if old == nil {
			return
		}
		delete(ts.m, oldKey)
		ts.evicting.Go(func() { old.ep.Close() })
	}
}

// close closes every template.
func (ts *templates) close() {
	ts.mu.Lock()
	ts.closed = true
	all := ts.m
	ts.m = map[string]*template{}
	ts.mu.Unlock()
	for _, tp := range all {
		<-tp.ready
		if tp.ep != nil {
			tp.ep.Close()
		}
	}
	ts.evicting.Wait()
}
