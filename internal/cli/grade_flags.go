package cli

import (
	"flag"

	"cwm/internal/reward"
)

// gradeFlags are the reward flags shared by forage and reward.
type gradeFlags struct {
	mapping reward.Mapping
}

func (g *gradeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.mapping.Kind, "reward", "cwm", "reward `kind`: binary (1 resolved, else 0) or cwm (+1 resolved, else 0 when the similarity reaches the threshold, else -1)")
	fs.Float64Var(&g.mapping.Threshold, "similarity-threshold", 0.5, "similarity at or above which an unresolved patch earns the middle cwm reward")
	fs.Float64Var(&g.mapping.Scale, "cwm-scale", 0, "0: the paper's cwm mapping (+1/0/-1); S>0: CWM's released code (-1+S resolved, -1+threshold*S similar, else -1)")
}
