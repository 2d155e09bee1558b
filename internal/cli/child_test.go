package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
)

// TestCLIChild is the cwm process the crash tests kill: the test binary
// re-executed, running the command line in CWM_CLI_CHILD.
func TestCLIChild(t *testing.T) {
	args := os.Getenv("CWM_CLI_CHILD")
	if args == "" {
		t.Skip("only run as a crash test's child")
	}
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatal(err)
	}
	// As command.Main runs it: SIGINT and SIGTERM cancel the context.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, argv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cliChild returns a command running cwm with args in a process of its
// own (TestCLIChild), with CWM_HOME set to home, for a test to kill.
func cliChild(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	argv, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCLIChild$")
	cmd.Env = append(os.Environ(), "CWM_HOME="+home, "CWM_CLI_CHILD="+string(argv))
	return cmd
}
