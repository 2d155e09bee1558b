package envserver

import (
	"strconv"
	"strings"
	"sync"

	"cwm/internal/jsonl"
	"cwm/internal/trajectory"
)

// trajectoryLog appends finished episodes to the trajectories file, and
// numbers the samples of each task so that lines of this run and of
// earlier runs never share a (task_id, sample) key. A nil log writes
// nothing and still numbers samples.
type trajectoryLog struct {
	w *jsonl.Writer

	mu   sync.Mutex // guards next
	next map[string]int
}

// openTrajectoryLog opens path for appending (a crash's torn last line is
// cut off) and reads the samples its lines already use.
func openTrajectoryLog(path string) (*trajectoryLog, error) {
	keys, err := jsonl.Keys(path, trajectory.LineKey)
	if err != nil {
		return nil, err
	}
	w, err := jsonl.Append(path)
	if err != nil {
		return nil, err
	}
	l := &trajectoryLog{w: w, next: map[string]int{}}
	for k := range keys {
		task, sample, _ := strings.Cut(k, "\x00")
		if n, err := strconv.Atoi(sample); err == nil {
			l.next[task] = max(l.next[task], n+1)
		}
	}
	return l, nil
}

// sample returns the sample number of a new episode of task: want when
// given, else the next unused one.
func (l *trajectoryLog) sample(task string, want *int) int {
	if l == nil {
		if want != nil {
			return *want
		}
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next[task]
	if want != nil {
		n = *want
	}
	l.next[task] = max(l.next[task], n+1)
	return n
}

func (l *trajectoryLog) write(tr *trajectory.Trajectory) error {
	if l == nil || l.w == nil {
		return nil
	}
	return l.w.Write(tr)
}

func (l *trajectoryLog) close() {
	if l != nil && l.w != nil {
		l.w.Close()
	}
}
