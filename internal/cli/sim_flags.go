package cli

import (
	"flag"
	"os"
	"regexp"
	"time"

	"cwm/internal/command"
	"cwm/internal/sim"
)

// simFlags are the sim backend's flags, the same in cwm forage and cwm
// serve (docs/sim.md).
type simFlags struct {
	backend                   string
	model, baseURL, apiKeyEnv string
	reward                    string
	timeout                   time.Duration
	attempts                  int
	realEvery                 int
	observe                   string
	simCommands, realCommands string
	recordContext             bool
}

func (f *simFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.backend, "backend", "real", "swe episodes' backend: real, or sim (a world model answers the commands that execute code; docs/sim.md)")
	fs.StringVar(&f.model, "sim-model", "", "the world model's `name` as its server knows it (--backend sim)")
	fs.StringVar(&f.baseURL, "sim-base-url", "", "the world model's OpenAI-compatible endpoint `URL`")
	fs.StringVar(&f.apiKeyEnv, "sim-api-key-env", "OPENAI_API_KEY", "environment `variable` holding the world model's API key")
	fs.StringVar(&f.reward, "sim-reward", "", "reward model `name` at --sim-base-url: predicts the episode's reward in place of the real grading (flagged predicted)")
	fs.DurationVar(&f.timeout, "sim-timeout", time.Minute, "limit of one world-model request")
	fs.IntVar(&f.attempts, "sim-attempts", 3, "world-model requests per command before it runs for real")
	fs.IntVar(&f.realEvery, "real-every", 0, "also run every `N`th simulated command for real and record the pair (0: never)")
	fs.StringVar(&f.observe, "sim-observe", "sim", "what the agent sees of a command run both ways: sim or real")
	fs.StringVar(&f.simCommands, "sim-commands", "", "`regexp`: commands it matches go to the world model too")
	fs.StringVar(&f.realCommands, "real-commands", "", "`regexp`: commands it matches always run for real (wins over --sim-commands)")
	fs.BoolVar(&f.recordContext, "record-context", false, "on the real backend, record each classified command's world-model context (for cwm export transitions)")
}

// options are the sim options the flags ask for: nil for the real
// backend without recorded contexts. isSim is whether --backend sim was
// given (serve also takes the backend per reset).
func (f *simFlags) options() (opts *sim.Options, isSim bool, err error) {
	switch f.backend {
	case "real", "sim":
	default:
		return nil, false, command.Usagef("--backend %q: want real or sim", f.backend)
	}
	o := &sim.Options{RealEvery: f.realEvery, Observe: f.observe}
	for _, re := range []struct {
		flag, expr string
		dst        **regexp.Regexp
	}{{"--sim-commands", f.simCommands, &o.Classifier.SimRe}, {"--real-commands", f.realCommands, &o.Classifier.RealRe}} {
		if re.expr == "" {
			continue
		}
		r, err := regexp.Compile(re.expr)
		if err != nil {
			return nil, false, command.Usagef("%s: %v", re.flag, err)
		}
		*re.dst = r
	}
	if f.model != "" || f.baseURL != "" {
		if f.model == "" || f.baseURL == "" {
			return nil, false, command.Usagef("--sim-model and --sim-base-url go together")
		}
		cfg := sim.WorldModelConfig{BaseURL: f.baseURL, APIKey: os.Getenv(f.apiKeyEnv), Model: f.model,
			Timeout: f.timeout, Attempts: f.attempts}
		if o.World, err = sim.NewWorldModel(cfg); err != nil {
			return nil, false, err
		}
		if f.reward != "" {
			cfg.Model = f.reward
			if o.Reward, err = sim.NewRewardModel(cfg); err != nil {
				return nil, false, err
			}
		}
	} else if f.reward != "" {
		return nil, false, command.Usagef("--sim-reward needs --sim-base-url (and --sim-model)")
	}
	if f.attempts < 1 || f.timeout <= 0 {
		return nil, false, command.Usagef("--sim-attempts must be at least 1 and --sim-timeout positive")
	}
	if err := o.Check(); err != nil && (f.backend == "sim" || o.World != nil) {
		return nil, false, err
	}
	if f.recordContext {
		if f.backend == "sim" {
			return nil, false, command.Usagef("--record-context is for --backend real (the sim backend records its contexts)")
		}
		o.RecordOnly = true
	}
	if o.World == nil && !o.RecordOnly {
		return nil, false, nil
	}
	return o, f.backend == "sim", nil
}
