package envserver

import (
	"context"
	"sync"
	"time"

	"cwm/internal/env"
)

// warmer keeps the sandbox runtime's pool of warm sandboxes stocked for
// the environments episodes start on. A reset takes a warm sandbox when
// one is there (the reset of a closed one's upper layer: a few
// milliseconds) and starts a new one otherwise (a new sandbox init: tens
// of milliseconds, hundreds on a loaded machine). After each reset the
// warmer opens and closes one sandbox of the same environment in the
// background, which the runtime keeps warm, so that the next reset finds
// one; a burst of resets (a group of samples of one task) finds several.
type warmer struct {
	sbs *env.Sandboxes

	mu       sync.Mutex // guards inflight and closed
	inflight map[string]int
	closed   bool
	wg       sync.WaitGroup
}

// warmPerEnv bounds the background starts of one environment at a time.
const warmPerEnv = 2

func newWarmer(sbs *env.Sandboxes) *warmer {
	return &warmer{sbs: sbs, inflight: map[string]int{}}
}

// topUp starts up to n sandboxes of e in the background, at most
// warmPerEnv at a time, into the warm pool, until it holds n idle ones.
func (w *warmer) topUp(e *env.Env, n int) {
	for i := 0; i < n; i++ {
		w.mu.Lock()
		if w.closed || w.inflight[e.ID] >= warmPerEnv {
			w.mu.Unlock()
			return
		}
		w.inflight[e.ID]++
		w.wg.Add(1)
		w.mu.Unlock()
		go func() {
			defer w.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			w.sbs.Prewarm(ctx, e, n)
			w.mu.Lock()
			w.inflight[e.ID]--
			w.mu.Unlock()
		}()
	}
}

// close waits for the starts in flight; later topUps do nothing.
func (w *warmer) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
}
