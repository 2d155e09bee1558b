package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/shard"
)

func ints(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Run never has more than Workers items running, gives each running item
// a worker index of its own, and hands every outcome to done.
func TestRunBounded(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 50} {
		var running, most atomic.Int32
		var mu sync.Mutex
		busy := map[int]bool{}
		var got []int
		err := Run(context.Background(), ints(20), Options[int]{Workers: workers},
			func(ctx context.Context, w int, i int) (int, error) {
				mu.Lock()
				if busy[w] {
					t.Errorf("worker %d runs two items at once", w)
				}
				busy[w] = true
				mu.Unlock()
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				running.Add(-1)
				mu.Lock()
				busy[w] = false
				mu.Unlock()
				return i * i, nil
			},
			func(i, sq int, err error) error {
				if err != nil || sq != i*i {
					t.Errorf("done(%d, %d, %v)", i, sq, err)
				}
				got = append(got, i)
				return nil
			})
		want := min(max(workers, 1), 20)
		if err != nil || len(got) != 20 || int(most.Load()) > want {
			t.Errorf("Workers %d: Run = %v, %d outcomes, %d at once; want nil, 20, at most %d", workers, err, len(got), most.Load(), want)
		}
	}
}

// With InOrder, done sees the outcomes in the items' order however they
// finish.
func TestRunInOrder(t *testing.T) {
	var got []int
	err := Run(context.Background(), ints(12), Options[int]{Workers: 4, InOrder: true},
		func(ctx context.Context, _ int, i int) (int, error) {
			time.Sleep(time.Duration(12-i) * time.Millisecond) // later items finish first
			return i, nil
		},
		func(i, _ int, _ error) error { got = append(got, i); return nil })
	if err != nil || !cmp.Equal(got, ints(12)) {
		t.Errorf("InOrder: Run = %v, done saw %v; want 0..11 in order", err, got)
	}
}

// An error done returns ends the run: nothing more is taken, the running
// items are cancelled and their outcomes dropped, and Run returns it.
func TestRunDoneError(t *testing.T) {
	boom := errors.New("boom")
	var started atomic.Int32
	var seen []int
	err := Run(context.Background(), ints(100), Options[int]{Workers: 3},
		func(ctx context.Context, _ int, i int) (int, error) {
			started.Add(1)
			if i == 4 {
				return 0, boom
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Duration(i%3) * time.Millisecond):
				return i, nil
			}
		},
		func(i, _ int, err error) error {
			seen = append(seen, i)
			return err // the first error ends the run
		})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
	if n := started.Load(); n > 10 {
		t.Errorf("%d items started after an error at the fifth", n)
	}
	if seen[len(seen)-1] != 4 {
		t.Errorf("done saw %v after the error: outcomes after it must be dropped", seen)
	}
}

// A cancelled context stops the run: no more items, the running ones'
// outcomes still reach done (with their context cancelled), and Run
// returns the context's error.
func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	var interrupted int
	err := Run(ctx, ints(100), Options[int]{Workers: 2},
		func(ctx context.Context, _ int, i int) (int, error) {
			if started.Add(1) == 5 {
				cancel()
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(20 * time.Millisecond):
				return i, nil
			}
		},
		func(_, _ int, err error) error {
			if errors.Is(err, context.Canceled) {
				interrupted++
			}
			return nil
		})
	if !errors.Is(err, context.Canceled) || started.Load() > 6 || interrupted == 0 {
		t.Errorf("Run = %v after %d started, %d interrupted outcomes; want canceled, about 5, the running ones", err, started.Load(), interrupted)
	}
}

// Admit's decisions: Skip drops an item, Hold keeps it until a running
// item is done, Stop ends the handing out.
func TestRunAdmit(t *testing.T) {
	// A cap of two items per group in flight, five groups, and a stop
	// after 30 items were taken: what tasks mutate does per function.
	type item struct{ i, group int }
	var items []item
	for i := range 60 {
		items = append(items, item{i, i % 5})
	}
	var mu sync.Mutex
	inflight := map[int]int{}
	taken := 0
	var ran []int
	err := Run(context.Background(), items, Options[item]{Workers: 4,
		Admit: func(it item, running int) Admission {
			switch {
			case it.group == 3:
				return Skip
			case taken >= 30:
				return Stop
			case inflight[it.group] >= 1:
				return Hold
			}
			inflight[it.group]++
			taken++
			return Take
		}},
		func(ctx context.Context, _ int, it item) (int, error) {
			mu.Lock()
			ran = append(ran, it.i)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			return it.group, nil
		},
		func(it item, g int, _ error) error {
			inflight[g]--
			return nil
		})
	if err != nil || len(ran) != 30 {
		t.Fatalf("Run = %v after running %d items, want 30", err, len(ran))
	}
	for _, i := range ran {
		if i%5 == 3 {
			t.Errorf("item %d of the skipped group ran", i)
		}
	}

	// Hold with nothing running ends the run.
	n := 0
	err = Run(context.Background(), ints(5), Options[int]{Workers: 2,
		Admit: func(i, running int) Admission {
			if i >= 2 {
				return Hold
			}
			return Take
		}},
		func(ctx context.Context, _ int, i int) (int, error) { return i, nil },
		func(int, int, error) error { n++; return nil })
	if err != nil || n != 2 {
		t.Errorf("Hold with nothing running: Run = %v after %d items, want the 2 taken", err, n)
	}
}

func TestNewPlan(t *testing.T) {
	key := func(i int) string { return strconv.Itoa(i) }
	done := map[string]bool{"2": true, "3": true, "6": true}
	cases := []struct {
		order Order
		part  shard.Shard
		todo  []int
	}{
		{InOrder, shard.All, []int{0, 1, 4, 5, 7, 8, 9}},
		// 0, 1, 4 and 5 come before 6, the last done: in flight when the
		// earlier run stopped, they go last.
		{UnfinishedLast, shard.All, []int{7, 8, 9, 0, 1, 4, 5}},
	}
	for _, c := range cases {
		p := NewPlan(ints(10), key, c.part, done, c.order)
		if !cmp.Equal(p.Todo, c.todo) || len(p.Mine) != 10 || p.Resumed() != 3 {
			t.Errorf("NewPlan(order %d) = todo %v, %d mine, %d resumed; want %v, 10, 3", c.order, p.Todo, len(p.Mine), p.Resumed(), c.todo)
		}
	}
	// Shards are disjoint and cover the items.
	seen := map[int]int{}
	for i := range 3 {
		for _, it := range NewPlan(ints(100), key, shard.Shard{Index: i, Count: 3}, nil, InOrder).Todo {
			seen[it]++
		}
	}
	if len(seen) != 100 {
		t.Errorf("3 shards cover %d of 100 items", len(seen))
	}
	for it, n := range seen {
		if n != 1 {
			t.Errorf("item %d is in %d shards", it, n)
		}
	}
}

func TestTally(t *testing.T) {
	tl := NewTally(nil)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { tl.Count(fmt.Sprint([]string{"ok", "exception", "timeout"}[i%3])) })
	}
	wg.Wait()
	if tl.Total() != 100 || tl.Get("ok") != 34 || tl.String() != "exception 33, ok 34, timeout 33" {
		t.Errorf("Tally = %d, %q; want 100 and the sorted counts", tl.Total(), tl.String())
	}
	var none *Tally
	none.Count("x")
	if none.Total() != 0 || none.String() != "" {
		t.Error("a nil Tally counted")
	}
}
