package jsonl

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashChildEnv names the file a re-executed test binary appends to; its
// presence makes TestCrashChild act as the child of TestCrash.
const crashChildEnv = "CWM_JSONL_CRASH_CHILD"

// TestCrashChild is the process TestCrash kills. Like a real stage it
// resumes: it reads the ids already written and appends item-0, item-1, ...
// skipping those, acknowledging each line on stdout once Write returns.
// Payloads are up to 64 KiB so that SIGKILL often lands inside a write(2)
// and leaves a torn line.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("run by TestCrash only")
	}
	done, err := Keys(path, Field("id"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child keys:", err)
		os.Exit(3)
	}
	w, err := Append(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child append:", err)
		os.Exit(3)
	}
	out := os.Stdout
	fmt.Fprintln(out, "ready")
	fill := strings.Repeat("z", 64<<10)
	// The deadline bounds the disk used should the parent die before killing.
	for i, deadline := 0, time.Now().Add(10*time.Second); time.Now().Before(deadline); i++ {
		id := "item-" + strconv.Itoa(i)
		if done[id] {
			continue
		}
		n := rand.IntN(len(fill))
		if err := w.Write(payload{ID: id, Len: n, Fill: fill[:n]}); err != nil {
			fmt.Fprintln(os.Stderr, "child write:", err)
			os.Exit(3)
		}
		fmt.Fprintln(out, "ack", id)
	}
	os.Exit(4) // never killed: the parent reports it
}

func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary repeatedly")
	}
	path := filepath.Join(t.TempDir(), "crash.jsonl")
	acked := map[string]bool{}
	torn := 0
	// Whether a kill lands inside a write(2) is luck, so keep killing until
	// the repair path has run a few times, within a bound.
	kills := 0
	for ; kills < 12 || (torn < 3 && kills < 60); kills++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() || lines.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: child did not start: %q %s", kills, lines.Text(), stderr.Bytes())
		}
		// Let it append for a random while, then kill it without warning.
		time.Sleep(time.Duration(rand.IntN(10)+1) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			if id, ok := strings.CutPrefix(lines.Text(), "ack "); ok {
				acked[id] = true
			}
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: child ended by %v, not by our SIGKILL; stderr: %s", kills, err, stderr.Bytes())
		}
		if endsTorn(t, path) {
			torn++
		}
		// Resume as a stage would: Append repairs the file.
		w, err := Append(path)
		if err != nil {
			t.Fatalf("kill %d: Append after kill: %v", kills, err)
		}
		w.Close()
		checkCrashFile(t, path, acked)
	}
	t.Logf("%d kills, %d left a torn last line, %d lines acknowledged", kills, torn, len(acked))
	if torn == 0 {
		t.Log("no kill landed inside a write; the torn-line repair was not exercised here (TestAppendCutsTornTail covers it)")
	}
	if len(acked) == 0 {
		t.Error("the child never acknowledged a line: the test exercised nothing")
	}
}

// endsTorn reports whether the file ends without a newline.
func endsTorn(t *testing.T, path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(b) > 0 && b[len(b)-1] != '\n'
}

// checkCrashFile checks that every line is intact, no id repeats, nothing
// acknowledged is lost, and the ids are exactly item-0..item-(n-1): a torn
// line cut off by Append must have been written again by the next child.
func checkCrashFile(t *testing.T, path string, acked map[string]bool) {
	t.Helper()
	if endsTorn(t, path) {
		t.Fatal("file still ends with a torn line after Append")
	}
	seen := map[string]bool{}
	err := Decode(path, func(_ int, p payload) error {
		if seen[p.ID] {
			return fmt.Errorf("duplicate id %s", p.ID)
		}
		seen[p.ID] = true
		return p.check()
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := range acked {
		if !seen[id] {
			t.Fatalf("acknowledged line %s is missing", id)
		}
	}
	for i := range len(seen) {
		if id := "item-" + strconv.Itoa(i); !seen[id] {
			t.Fatalf("%d lines but %s is missing", len(seen), id)
		}
	}
}
