package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/rogpeppe/go-internal/testscript"

	"cwm/internal/command"
	"cwm/internal/golden"
	"cwm/internal/model/modeltest"
)

// TestMain makes the test binary cwm itself when it runs as the scripts'
// "cwm" command.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"cwm": func() { command.Main(Program) }})
}

// TestScripts runs the end-to-end scripts of testdata/script: for every
// command, its help, a usage error, an input error and its main path on
// the example repository, each with the output expected. go test -update
// rewrites the expected output of cmp commands in the scripts.
//
// Besides testscript's commands, a script has:
//
//	exits CODE cwm ARGS...   run cwm and check its exit status
//	sharedhome               CWM_HOME is the shared one (below); read it only
//	privatehome              CWM_HOME is a copy of the shared one, the script's own
//	registry                 run an OCI registry (go-containerregistry's, in
//	                         process) on 127.0.0.1; $REGISTRY is its host:port
//	modelserver FILE         serve the replies in FILE (JSON lines of
//	                         {"tool", "input"} or {"text"}), one per turn of
//	                         each conversation; $MODEL_URL is its address
//
// The shared home holds the example repository's environment (textkit,
// one baseline run, with its coverage map) and $TASKS, two verified
// mutate-fix tasks on it, made once for every script. $TEXTKIT is the
// example repository.
func TestScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example environment")
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		UpdateScripts:       golden.Updating(),
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			fx, err := sharedFixture()
			if err != nil {
				return err
			}
			textkit, err := filepath.Abs(filepath.Join("..", "..", "examples", "textkit"))
			if err != nil {
				return err
			}
			e.Setenv("CWM_HOME", filepath.Join(e.WorkDir, ".cwm"))
			e.Setenv("SHARED_HOME", fx.home)
			e.Setenv("TASKS", fx.tasks)
			e.Setenv("TEXTKIT", textkit)
			e.Setenv("CWM_DEBUG", "")
			e.Setenv("JOB_COMPLETION_INDEX", "")
			e.Setenv("SLURM_ARRAY_TASK_ID", "") // cwm's own tests may run in an array task
			e.Setenv("HOME", e.WorkDir)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":       exits,
			"sharedhome":  func(ts *testscript.TestScript, _ bool, _ []string) { ts.Setenv("CWM_HOME", ts.Getenv("SHARED_HOME")) },
			"privatehome": privateHome,
			"modelserver": modelServer,
			"registry":    ociRegistry,
		},
	})
}

// exits runs a command and checks its exit status; its output is kept for
// the stdout and stderr commands that follow.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// privateHome gives the script a copy of the shared home.
func privateHome(ts *testscript.TestScript, _ bool, _ []string) {
	dst := ts.MkAbs(".private-cwm")
	src := ts.Getenv("SHARED_HOME")
	ents, err := os.ReadDir(src)
	if err != nil {
		ts.Fatalf("copy the shared home: %v", err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		ts.Fatalf("copy the shared home: %v", err)
	}
	args := []string{"-a"}
	for _, e := range ents {
		// The runtime's state is the shared home's own, and other
		// scripts' sandboxes come and go in it while this one copies.
		if e.Name() != "run" {
			args = append(args, filepath.Join(src, e.Name()))
		}
	}
	if len(args) > 1 {
		if out, err := exec.Command("cp", append(args, dst)...).CombinedOutput(); err != nil {
			ts.Fatalf("copy the shared home: %v\n%s", err, out)
		}
	}
	ts.Setenv("CWM_HOME", dst)
}

// modelServer serves scripted replies: the n-th line of the file is the
// reply to the n-th request of a conversation.
func modelServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: modelserver FILE")
	}
	var replies []modeltest.Reply
	for _, line := range strings.Split(strings.TrimSpace(ts.ReadFile(args[0])), "\n") {
		var r struct{ Tool, Input, Text string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			ts.Fatalf("modelserver: %s: %v", line, err)
		}
		if r.Tool != "" {
			replies = append(replies, modeltest.Tool(r.Tool, r.Input))
		} else {
			replies = append(replies, modeltest.Text(r.Text))
		}
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if n := r.Turn(); n < len(replies) {
			return replies[n]
		}
		return modeltest.Text("no more replies")
	}, true)
	if err != nil {
		ts.Fatalf("modelserver: %v", err)
	}
	ts.Defer(srv.Close)
	ts.Setenv("MODEL_URL", srv.URL)
}

// fixture is the shared home of the scripts.
type fixture struct {
	home, tasks string
}

var shared struct {
	once sync.Once
	fx   fixture
	err  error
}

// sharedFixture builds the shared home once per test binary: the example
// repository's environment and two tasks on it, made by cwm itself.
func sharedFixture() (fixture, error) {
	shared.once.Do(func() {
		home, err := os.MkdirTemp("", "cwm-scripts-")
		if err != nil {
			shared.err = err
			return
		}
		shared.fx = fixture{home: home, tasks: filepath.Join(home, "tasks.jsonl")}
		run := func(args ...string) error {
			var out, errb strings.Builder
			e := command.NewEnv(strings.NewReader(""), &out, &errb)
			e.Home = home
			cmd, rest := lookup(args)
			if code := command.Exec(context.Background(), e, cmd, rest); code != 0 {
				return fmt.Errorf("cwm %s = %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
			}
			return nil
		}
		if shared.err = run("env", "build", "--offline", "--runs", "1", "--name", "textkit", "--quiet", "../../examples/textkit"); shared.err != nil {
			return
		}
		shared.err = run("tasks", "mutate", "--env", "textkit", "--out", shared.fx.tasks, "--max", "2",
			"--functions", "levenshtein", "--families", "operators", "--seed", "1", "--quiet")
	})
	return shared.fx, shared.err
}

// lookup finds the command args names, as the dispatcher does.
func lookup(args []string) (command.Command, []string) {
	for n := min(2, len(args)); n >= 1; n-- {
		name := strings.Join(args[:n], " ")
		for _, mk := range Program.Commands {
			if c := mk(); c.Name() == name {
				return c, args[n:]
			}
		}
	}
	panic("no command " + strings.Join(args, " "))
}

// ociRegistry serves an OCI registry for the script, until it ends.
func ociRegistry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: registry")
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	ts.Defer(srv.Close)
	ts.Setenv("REGISTRY", strings.TrimPrefix(srv.URL, "http://"))
}
