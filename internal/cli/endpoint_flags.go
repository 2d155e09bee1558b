package cli

import (
	"cmp"
	"flag"
	"os"
	"time"

	"cwm/internal/command"
	"cwm/internal/model"
)

// endpointFlags are the model endpoint's flags, declared once for every
// command that asks a model (the eval commands, forage, select, tasks
// commits, the setup agent) so that they say and mean the same thing
// everywhere; endpointUse picks the ones a command takes.
type endpointFlags struct {
	model, baseURL, apiKeyEnv string
	temperature, topP         optFloat
	maxTokens                 int
	seed                      optInt
	retries                   int
	requestTimeout            time.Duration
	concurrency               int
	// sampling is whether the sampling and request flags were registered:
	// without them the client takes its own defaults.
	sampling bool
}

// endpointUse says which of endpointFlags a command takes and how their
// help differs from the shared sentence ("" keeps it).
type endpointUse struct {
	// model is --model's help; modelFlag its name when not "model"
	// (trace func's --input-model, beside its own flags).
	model, modelFlag string
	// sampling registers --temperature, --max-tokens, --retries and
	// --request-timeout; without it only --model, --base-url and
	// --api-key-env exist.
	sampling bool
	// temperature is --temperature's help.
	temperature string
	// per is what one completion is in --max-tokens' help ("answer");
	// maxTokens what its 0 means ("the server's default").
	per, maxTokens string
	// topP registers --top-p.
	topP bool
	// seedOf registers --seed, whose sample k of a seedOf uses seed+k.
	seedOf string
	// concurrency registers --concurrency as model requests at once.
	concurrency bool
}

func (f *endpointFlags) register(fs *flag.FlagSet, u endpointUse) {
	fs.StringVar(&f.model, cmp.Or(u.modelFlag, "model"), "", cmp.Or(u.model, "model `name` as the server knows it"))
	fs.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible endpoint `URL`, e.g. http://localhost:8000/v1")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment `variable` holding the API key")
	if !u.sampling {
		return
	}
	f.sampling = true
	fs.Var(&f.temperature, "temperature", cmp.Or(u.temperature, "sampling temperature (default: the server's)"))
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "completion `tokens` per "+cmp.Or(u.per, "answer")+" (0: "+cmp.Or(u.maxTokens, "the server's default")+")")
	fs.IntVar(&f.retries, "retries", 6, "retries of a failed model request (429, 5xx, network, timeout)")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 10*time.Minute, "limit of one model request")
	if u.topP {
		fs.Var(&f.topP, "top-p", "nucleus sampling top_p (default: the server's)")
	}
	if u.seedOf != "" {
		fs.Var(&f.seed, "seed", "sampling seed; sample k of a "+u.seedOf+" uses seed+k")
	}
	if u.concurrency {
		fs.IntVar(&f.concurrency, "concurrency", 8, "model requests at once")
	}
}

// check checks the flags of a command that always asks the model.
func (f *endpointFlags) check() error {
	switch {
	case f.model == "" || f.baseURL == "":
		return command.Usagef("--model and --base-url are required")
	case f.concurrency < 1 || f.maxTokens < 0:
		return command.Usagef("--concurrency must be at least 1, --max-tokens not negative")
	}
	return nil
}

// config is the model client's configuration; maxTokens is used when
// --max-tokens is 0.
func (f *endpointFlags) config(maxTokens int) model.ClientConfig {
	cfg := model.ClientConfig{BaseURL: f.baseURL, APIKey: os.Getenv(f.apiKeyEnv), Model: f.model}
	if !f.sampling {
		return cfg
	}
	cfg.MaxRetries = f.retries
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = -1 // the client's 0 means its default
	}
	if f.maxTokens > 0 {
		maxTokens = f.maxTokens
	}
	cfg.Sampling = model.Sampling{Temperature: f.temperature.ptr(), TopP: f.topP.ptr(), MaxTokens: maxTokens}
	cfg.RequestTimeout = f.requestTimeout
	return cfg
}

// client makes the model client; maxTokens is used when --max-tokens is 0.
func (f *endpointFlags) client(maxTokens int) (*model.Client, error) {
	return model.NewClient(f.config(maxTokens))
}
