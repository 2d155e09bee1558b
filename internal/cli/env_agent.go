package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"cwm/internal/agent"
	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/jsonl"
	"cwm/internal/setupagent"
)

// setupAgentFlags are env build's flags for the setup agent.
type setupAgentFlags struct {
	always bool
	endpointFlags
	protocol              string
	trajectories          string
	maxTurns, contextToks int
	wallTime              time.Duration
}

func (a *setupAgentFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&a.always, "agent", false, "run the setup agent (needs --model and --base-url) even when the detected recipe works; without it the agent runs only when the detected recipe gives no usable environment")
	a.endpointFlags.register(fs, endpointUse{model: "setup agent's model `name` as the server knows it"})
	fs.StringVar(&a.protocol, "protocol", "cwm", "setup agent's tool protocol: cwm or openai")
	fs.StringVar(&a.trajectories, "trajectories", "", "setup trajectories `file` (JSONL, appended to; default $CWM_HOME/setup-trajectories.jsonl)")
	fs.IntVar(&a.maxTurns, "agent-turns", 40, "model replies the setup agent may take")
	fs.IntVar(&a.contextToks, "agent-context", agent.DefaultLimits.ContextTokens, "setup agent's context window in `tokens`")
	fs.DurationVar(&a.wallTime, "agent-timeout", 20*time.Minute, "wall-clock limit of the setup agent")
}

// wanted reports whether the setup agent runs after a build that gave
// built, and checks its flags.
func (a *setupAgentFlags) wanted(built *env.Env, overridden bool) (bool, error) {
	if a.model == "" && a.baseURL == "" {
		if a.always {
			return false, command.Usagef("--agent needs --model and --base-url")
		}
		return false, nil
	}
	if a.model == "" || a.baseURL == "" {
		return false, command.Usagef("the setup agent needs both --model and --base-url")
	}
	if overridden {
		return false, nil // the user's --install/--test are the recipe
	}
	return a.always || !built.Usable, nil
}

// run runs the setup agent on built (its /repo is the repository), writes
// its trajectory, builds with the recipe it proposes (provenance "agent")
// and returns that environment when it is usable; otherwise built, with
// what went wrong said on stderr.
func (a *setupAgentFlags) run(ctx context.Context, e *command.Env, sbs *env.Sandboxes, built *env.Env, opts envbuild.Options) (*env.Env, error) {
	proto, err := agent.NewProtocol(a.protocol, "")
	if err != nil {
		return nil, err
	}
	client, err := a.client(0)
	if err != nil {
		return nil, err
	}
	limits := agent.Limits{MaxTurns: a.maxTurns, ContextTokens: a.contextToks, WallTime: a.wallTime}
	runner := &agent.Runner{Sandboxes: sbs, Client: client, Protocol: proto, Limits: limits, Log: e.Log}
	say := opts.Progress
	if say == nil {
		say = io.Discard
	}
	fmt.Fprintf(say, "setup agent: %s at %s, at most %d turns and %v\n", a.model, a.baseURL, a.maxTurns, a.wallTime)
	prop, tr, aerr := setupagent.Run(ctx, runner, built, built.Name)
	if tr != nil {
		path := a.trajectories
		if path == "" {
			path = filepath.Join(e.Home, "setup-trajectories.jsonl")
		}
		w, err := jsonl.Append(path)
		if err != nil {
			return nil, fmt.Errorf("setup trajectories: %w", err)
		}
		err = w.Write(tr)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("setup trajectories: %w", err)
		}
		fmt.Fprintf(say, "setup agent: %s after %d turns (trajectory in %s)\n", tr.ExitReason, tr.Turns, path)
	}
	if aerr != nil {
		fmt.Fprintf(e.Stderr, "cwm env build: %v\n", aerr)
		return built, nil
	}
	opts.Install, opts.Test, opts.RecipeFrom, opts.Force = prop.Install, prop.Test, "agent", true
	mine, err := envbuild.Build(ctx, sbs, opts)
	if err != nil {
		return nil, err
	}
	if !mine.Usable {
		fmt.Fprintf(e.Stderr, "cwm env build: the setup agent's recipe is not usable either: %s\n", mine.Reason)
		return built, nil
	}
	return mine, nil
}
