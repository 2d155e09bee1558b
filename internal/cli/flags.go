package cli

// Flag types and flags that several commands bind.

import (
	"flag"
	"fmt"
	"strconv"
)

// shardFlag binds a batch stage's --shard; what says what is split, and
// by which key.
func shardFlag(fs *flag.FlagSet, p *string, what string) {
	fs.StringVar(p, "shard", "", "`i/n`: "+what+" of shard i (0-based) of n only (default: the shard of the Slurm array task or Kubernetes indexed job running it, else all; docs/scale.md)")
}

// optFloat and optInt are flags that remember whether they were given, so
// that the server's defaults apply otherwise.
type (
	optFloat = opt[float64]
	optInt   = opt[int64]
)

type opt[T float64 | int64] struct {
	v   T
	set bool
}

func (o *opt[T]) String() string {
	if !o.set {
		return ""
	}
	return fmt.Sprint(o.v)
}

func (o *opt[T]) Set(s string) error {
	var err error
	switch v := any(&o.v).(type) {
	case *float64:
		*v, err = strconv.ParseFloat(s, 64)
	case *int64:
		*v, err = strconv.ParseInt(s, 10, 64)
	}
	o.set = err == nil
	return err
}

func (o *opt[T]) ptr() *T {
	if !o.set {
		return nil
	}
	return &o.v
}
