package cli

// Flag types and flags that several commands bind.

import (
	"flag"
	"strconv"
)

// shardFlag binds a batch stage's --shard; what says what is split, and
// by which key.
func shardFlag(fs *flag.FlagSet, p *string, what string) {
	fs.StringVar(p, "shard", "", "`i/n`: "+what+" of shard i (0-based) of n only (default: the shard of the Slurm array task or Kubernetes indexed job running it, else all; docs/scale.md)")
}

// optFloat and optInt are flags that remember whether they were given, so
// that the server's defaults apply otherwise.
type optFloat struct {
	v   float64
	set bool
}

func (o *optFloat) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatFloat(o.v, 'g', -1, 64)
}

func (o *optFloat) Set(s string) (err error) {
	o.v, err = strconv.ParseFloat(s, 64)
	o.set = err == nil
	return err
}

func (o *optFloat) ptr() *float64 {
	if !o.set {
		return nil
	}
	return &o.v
}

func (o *optInt) ptr() *int64 {
	if !o.set {
		return nil
	}
	return &o.v
}

type optInt struct {
	v   int64
	set bool
}

func (o *optInt) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatInt(o.v, 10)
}

func (o *optInt) Set(s string) (err error) {
	o.v, err = strconv.ParseInt(s, 10, 64)
	o.set = err == nil
	return err
}
