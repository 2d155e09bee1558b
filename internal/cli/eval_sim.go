package cli

import (
	"context"
	"flag"

	"cwm/internal/command"
	"cwm/internal/sim"
)

type evalSimCmd struct {
	modelLatency float64
	json         bool
}

func (*evalSimCmd) Name() string { return "eval sim" }
func (*evalSimCmd) Synopsis() string {
	return "measure a world model's fidelity and cost from the sim backend's recorded (predicted, real) pairs"
}
func (*evalSimCmd) Usage() string {
	return `TRAJ.jsonl... [--model-latency SECONDS] [--json]
Reads trajectories of the sim backend (cwm forage or cwm serve with
--backend sim; pairs exist where --real-every or a fallback ran a
simulated command for real) and prints, by command kind and over all:
exit-code agreement, exact and normalised output match (durations,
addresses, /tmp paths, whitespace and pytest's rules normalised), and the
agreement of the tests' outcomes that pytest -rA reports on both sides;
the share of classified commands that did not run for real; the world
model's failed attempts by cause; the agreement of predicted and real
rewards (--sim-reward, graded later with cwm reward); cwm's own overhead
per simulated step, and per environment the mean real step time (from the
recorded real runs) and the break-even model latency below which
simulating a step is faster than running it. --model-latency is the
world model's assumed latency (default: the mean measured in the
records). See docs/sim.md.

Examples:
  cwm forage --backend sim --real-every 1 --sim-model wm --sim-base-url http://localhost:8001/v1 \
      --tasks tasks.jsonl --model policy --base-url http://localhost:8000/v1 --out traj.jsonl
  cwm eval sim traj.jsonl --model-latency 0.8`
}

func (c *evalSimCmd) Flags(fs *flag.FlagSet) {
	fs.Float64Var(&c.modelLatency, "model-latency", -1, "assumed `seconds` of one world-model answer (negative: the mean measured in the records)")
	fs.BoolVar(&c.json, "json", false, "print the measures as JSON")
}

func (c *evalSimCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) == 0 {
		return command.Usagef("name one or more trajectories files")
	}
	trs, err := sim.Load(args)
	if err != nil {
		return err
	}
	f := sim.Measure(trs, c.modelLatency)
	if c.json {
		writeJSON(e.Stdout, f)
		return nil
	}
	f.Write(e.Stdout)
	return nil
}
