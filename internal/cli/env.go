package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"cwm/internal/command"
	"cwm/internal/envbuild"
	"cwm/internal/sandbox"
)

// resolveEnv finds the environment named by ref (id, unique id prefix or
// name).
func resolveEnv(e *command.Env, ref string) (*envbuild.Env, error) {
	env, err := envbuild.NewStore(e.Home).Resolve(ref)
	if err != nil {
		return nil, err
	}
	return env, nil
}

// progressTo is where a command's progress goes: stderr, unless quiet.
func progressTo(e *command.Env, quiet bool) io.Writer {
	if quiet {
		return nil
	}
	return e.Stderr
}

// newRuntime starts a sandbox runtime for one command. Sandboxes are not
// kept warm: the command ends soon after.
func newRuntime(e *command.Env) (*sandbox.Runtime, error) {
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: -1})
	if err != nil {
		return nil, fmt.Errorf("start sandbox runtime: %w", err)
	}
	return rt, nil
}

// openEnvSandbox starts a sandbox on an environment.
func openEnvSandbox(ctx context.Context, e *command.Env, env *envbuild.Env) (*sandbox.Sandbox, func(), error) {
	rt, err := newRuntime(e)
	if err != nil {
		return nil, nil, err
	}
	s, err := rt.New(ctx, env.SandboxConfig())
	if err != nil {
		rt.Close()
		return nil, nil, fmt.Errorf("start sandbox on %s: %w", env.ID, err)
	}
	return s, func() { s.Close(); rt.Close() }, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// humanBytes formats a size for tables: 1.2M, 340K.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// interspersed parses flags that follow positional arguments ("env test
// ID --json"), which flag.FlagSet stops at. Arguments after "--" are
// all positional.
func interspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			return append(pos, args[1:]...), nil
		case strings.HasPrefix(a, "-") && a != "-":
			if err := fs.Parse(args); err != nil {
				return nil, command.Usagef("%v", err)
			}
			args = fs.Args()
			if len(args) > 0 && args[0] == a {
				// Parse stopped before it: a lone "--" it consumed.
				return append(pos, args...), nil
			}
		default:
			pos = append(pos, a)
			args = args[1:]
		}
	}
	return pos, nil
}
