package taskimport

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"cwm/clients/go/envclient"
	"cwm/internal/env"
	"cwm/internal/envserver"
	"cwm/internal/reward"
	"cwm/internal/task"
)

// checkServed runs an episode of k, an imported task, through cwm serve
// (its REST API, as envclient speaks it): the first command (first) must
// print what starts with want, run in the image's working directory; the
// gold patch applied by a bash step and submitted must get reward 1.
func checkServed(t *testing.T, ctx context.Context, home string, k task.Task, first, want string) {
	t.Helper()
	srv, err := envserver.New(envserver.Options{Sandboxes: env.NewSandboxes(rt), Store: env.NewStore(home), Tasks: []task.Task{k}, Mapping: reward.Mapping{Kind: "binary"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	c := envclient.New(envserver.Addr(ln), "", nil)
	res, err := c.Create(ctx, map[string]any{"task_id": k.InstanceID})
	if err != nil {
		t.Fatalf("Create(%s) = %v", k.InstanceID, err)
	}
	steps := []struct{ tool, args string }{
		{"bash", first},
		{"bash", "cat > /tmp/fix.diff <<'EOF'\n" + k.Patch + "EOF\ngit apply /tmp/fix.diff && git diff > /tmp/fix.patch && echo applied"},
		{"submit", "/tmp/fix.patch"},
	}
	for i, st := range steps {
		r, err := c.Step(ctx, res.EpisodeID, map[string]any{"tool": st.tool, "arguments": st.args})
		if err != nil {
			t.Fatalf("%s: step %d (%s): %v", k.InstanceID, i, st.tool, err)
		}
		var o struct{ Output string }
		json.Unmarshal(r.Observation, &o)
		switch {
		case i == 0 && !strings.HasPrefix(o.Output+"\n", want):
			t.Errorf("%s: the first command saw %q; want it to start with %q", k.InstanceID, o.Output, want)
		case i == 1 && !strings.Contains(o.Output, "applied"):
			t.Errorf("%s: the gold patch did not apply in the episode: %q", k.InstanceID, o.Output)
		case i == 2 && (!r.Done || r.Reward == nil || *r.Reward != 1):
			t.Errorf("%s: submit of the gold fix: done %v, reward %v (%s); want done with reward 1", k.InstanceID, r.Done, r.Reward, r.Observation)
		}
	}
}
