package envserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// episodeImpl is one episode of a kind, what an entry holds between
// messages. Its methods are called one at a time (the entry's lock).
type episodeImpl interface {
	// step runs one action, the step message's data.
	step(ctx context.Context, action json.RawMessage) (Result, error)
	// clone branches the episode: a new, independent one as it is now.
	clone(ctx context.Context) (episodeImpl, error)
	// state is what the kind adds to the state message.
	state() map[string]any
	// finished reports whether the episode has ended.
	finished() bool
	close()
}

// entry is an open episode: its id, its kind's episode, its owner and its
// activity. Messages on an entry run one at a time under mu.
type entry struct {
	id      string
	kind    string
	created time.Time
	// ctx is cancelled when the entry closes, aborting a step in flight.
	ctx    context.Context
	cancel context.CancelFunc
	// last is the time of the last message, in Unix nanoseconds.
	last atomic.Int64
	// busy is set while a message runs.
	busy    atomic.Bool
	closing atomic.Bool

	mu    sync.Mutex // held while a message runs; guards ep, steps and ckpts
	ep    episodeImpl
	steps int
	// ckpts are the episode's checkpoints, oldest first (checkpoints.go).
	ckpts []*checkpoint
	// seed is the reset's OpenEnv seed, kept for the state.
	seed *int64

	// owner is the /ws connection the entry closes with (nil: REST, or
	// a clone not yet attached). Guarded by the server's mu.
	owner *wsConn
	// orphaned is set, under Server.mu, once its owner's connection has
	// ended and the entry is about to close with it: no connection may
	// attach to it any more.
	orphaned bool
}

func (e *entry) touch() { e.last.Store(time.Now().UnixNano()) }

func (e *entry) idle(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, e.last.Load()))
}

// newID makes an episode id: 16 random hex digits.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// acquire takes a slot for a new episode or bare connection.
func (s *Server) acquire() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return errDraining
	}
	if s.slots >= s.opts.MaxSessions {
		return &capacityError{active: s.slots, max: s.opts.MaxSessions}
	}
	// A slot without an entry is an episode starting or a /ws
	// connection that may reset at any moment: its tasks and descriptors
	// are on their way.
	starting := max(0, s.slots-len(s.entries))
	why := taskRoom(s.readSys, starting)
	if why == "" {
		why = fdRoom(s.fdLimit, s.slots, starting, s.countFDs)
	}
	if why != "" {
		s.metrics.machineRefused()
		return &capacityError{active: s.slots, max: s.opts.MaxSessions, machine: why}
	}
	s.slots++
	s.metrics.setSlots(s.slots)
	return nil
}

func (s *Server) release() {
	s.mu.Lock()
	s.slots--
	s.metrics.setSlots(s.slots)
	s.mu.Unlock()
}

// begin counts a message in flight, for the drain; it fails once the
// server drains.
func (s *Server) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return errDraining
	}
	s.inflight.Add(1)
	return nil
}

// register adds a new entry holding ep, which takes a slot the caller
// already holds. id "" picks one.
func (s *Server) register(id, kind string, ep episodeImpl, owner *wsConn) (*entry, error) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &entry{id: id, kind: kind, created: time.Now(), ctx: ctx, cancel: cancel, ep: ep, owner: owner}
	e.touch()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.id == "" {
		for e.id = newID(); s.entries[e.id] != nil; e.id = newID() {
		}
	} else if s.entries[e.id] != nil {
		cancel()
		return nil, invalid("value_error", fmt.Sprintf("episode_id %q is in use", id), "data", "episode_id")
	}
	s.entries[e.id] = e
	s.metrics.sessionOpened(kind)
	return e, nil
}

// lookup finds an open entry by the id a REST path names.
func (s *Server) lookup(id string) (*entry, error) {
	if err := checkEpisodeID(id, "path", "episode_id"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[id]
	if e == nil || e.closing.Load() {
		return nil, errNoEpisode(id)
	}
	return e, nil
}

// closeEntry closes an entry's episode and frees its slot: a step in
// flight is cancelled first. It is idempotent; keepSlot leaves the slot
// with the caller (a /ws connection resetting to a new episode).
func (s *Server) closeEntry(e *entry, why string) { s.closeEntrySlot(e, why, false) }

// It reports whether this call closed it (false: it was already closed,
// and its slot freed by whoever closed it).
func (s *Server) closeEntrySlot(e *entry, why string, keepSlot bool) bool {
	if !e.closing.CompareAndSwap(false, true) {
		return false
	}
	e.cancel()
	e.mu.Lock()
	releaseCheckpoints(e)
	if e.ep != nil {
		e.ep.close()
	}
	steps := e.steps
	e.mu.Unlock()
	s.mu.Lock()
	delete(s.entries, e.id)
	if !keepSlot {
		s.slots--
		s.metrics.setSlots(s.slots)
	}
	s.mu.Unlock()
	s.metrics.sessionClosed(e.kind)
	s.log.Debug("episode closed", "episode", e.id, "kind", e.kind, "steps", steps, "why", why)
	return true
}

// stepEntry runs one step on an entry under its lock. ctx bounds it
// besides the entry's own lifetime.
func (s *Server) stepEntry(ctx context.Context, e *entry, action json.RawMessage) (Result, error) {
	if err := s.begin(); err != nil {
		return Result{}, err
	}
	defer s.inflight.Done()
	if !e.mu.TryLock() {
		return Result{}, errBusy(e.id)
	}
	defer e.mu.Unlock()
	if e.closing.Load() {
		return Result{}, errNoEpisode(e.id)
	}
	e.busy.Store(true)
	defer e.busy.Store(false)
	defer e.touch()
	e.touch()
	ctx, cancel := mergeCancel(ctx, e.ctx)
	defer cancel()
	t0 := time.Now()
	res, err := e.ep.step(ctx, action)
	if err != nil {
		return Result{}, err
	}
	e.steps++
	s.metrics.stepped(e.kind, time.Since(t0))
	return res, nil
}

// cloneEntry branches an entry into a new one that takes a new slot.
func (s *Server) cloneEntry(ctx context.Context, e *entry, id string, owner *wsConn) (*entry, error) {
	c, err := s.forkEntry(ctx, e, id, owner, func(ctx context.Context) (episodeImpl, int, error) {
		ep, err := e.ep.clone(ctx)
		return ep, e.steps, err
	})
	if err == nil {
		s.metrics.cloned(e.kind)
	}
	return c, err
}

// forkEntry makes a new entry, which takes a new slot, of the episode
// fork makes from e (and the step count it starts at), under e's lock.
func (s *Server) forkEntry(ctx context.Context, e *entry, id string, owner *wsConn, fork func(ctx context.Context) (episodeImpl, int, error)) (*entry, error) {
	if err := checkEpisodeID(id, "data", "episode_id"); err != nil {
		return nil, err
	}
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.inflight.Done()
	if err := s.acquire(); err != nil {
		return nil, err
	}
	if !e.mu.TryLock() {
		s.release()
		return nil, errBusy(e.id)
	}
	e.touch()
	ctx, cancel := mergeCancel(ctx, e.ctx)
	defer cancel()
	ep, steps, err := fork(ctx)
	e.mu.Unlock()
	if err != nil {
		s.release()
		return nil, err
	}
	c, err := s.register(id, e.kind, ep, owner)
	if err != nil {
		ep.close()
		s.release()
		return nil, err
	}
	c.steps = steps
	return c, nil
}

// stateOf is the state message's data of an entry: OpenEnv's State
// (episode_id, step_count) and what cwm adds.
// While a step runs, the state says only that (busy), rather than wait
// for the step.
func (s *Server) stateOf(e *entry) map[string]any {
	if !e.mu.TryLock() {
		return map[string]any{"episode_id": e.id, "kind": e.kind, "busy": true,
			"created_at": float64(e.created.UnixNano()) / 1e9, "last_activity_at": float64(e.last.Load()) / 1e9}
	}
	defer e.mu.Unlock()
	st := map[string]any{}
	if e.ep != nil {
		st = e.ep.state()
		st["done"] = e.ep.finished()
	}
	st["episode_id"] = e.id
	st["step_count"] = e.steps
	if e.seed != nil {
		st["seed"] = *e.seed
	}
	st["kind"] = e.kind
	st["created_at"] = float64(e.created.UnixNano()) / 1e9
	st["last_activity_at"] = float64(e.last.Load()) / 1e9
	return st
}

// mergeCancel returns a context of a that is also cancelled with b.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(a)
	stop := context.AfterFunc(b, cancel)
	return ctx, func() { stop(); cancel() }
}

// startReaper starts the idle reaper; IdleTimeout < 0 disables it.
func (s *Server) startReaper() {
	s.stopReap, s.reapDone = make(chan struct{}), make(chan struct{})
	if s.opts.IdleTimeout < 0 {
		close(s.reapDone)
		return
	}
	every := min(max(s.opts.IdleTimeout/4, 10*time.Millisecond), 5*time.Second)
	go func() {
		defer close(s.reapDone)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stopReap:
				return
			case now := <-t.C:
				s.reap(now)
			}
		}
	}()
}

func (s *Server) stopReaper() {
	if s.stopReap == nil {
		return
	}
	close(s.stopReap)
	<-s.reapDone
}

// reap closes what has been idle past the timeout: connections (with
// their episodes) and episodes without a connection.
func (s *Server) reap(now time.Time) {
	limit := s.opts.IdleTimeout
	var conns []*wsConn
	var entries []*entry
	s.mu.Lock()
	for c := range s.conns {
		if c.idle(now) > limit {
			conns = append(conns, c)
		}
	}
	for _, e := range s.entries {
		if e.owner == nil && !e.busy.Load() && e.idle(now) > limit {
			entries = append(entries, e)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		s.metrics.reaped()
		s.log.Info("reaping idle connection", "episode", c.episodeID(), "idle", limit.String())
		c.shutdown(wsPolicy, fmt.Sprintf("idle for more than %s: the session is closed", limit))
	}
	for _, e := range entries {
		s.metrics.reaped()
		s.log.Info("reaping idle episode", "episode", e.id, "idle", limit.String())
		s.closeEntry(e, "idle")
	}
}
