package testrun

import (
	_ "embed"
	"encoding/json"
	"strings"
	"time"
)

//go:embed cwmreport.py
var cwmreportPy []byte

// ScratchDir is where cwm keeps its own files inside a sandbox (reporters,
// reports, the coverage recorder and its map): not under /tmp, which test
// commands clear (pytest --basetemp=/tmp deletes what its base holds), nor
// under /repo, which is the suite's.
const ScratchDir = "/var/lib/cwm"

// pluginDir is where Run puts its pytest reporter inside the sandbox, and
// its reports.
const pluginDir = ScratchDir + "/testrun"

type streamRecord struct {
	Start   string  `json:"start"`
	ID      string  `json:"id"`
	When    string  `json:"when"`
	Outcome string  `json:"outcome"`
	XFail   bool    `json:"xfail"`
	Seconds float64 `json:"seconds"`
	Message string  `json:"message"`
}

// parseStream reads the reporter's lines into per-test outcomes: a failed
// call is a failure, a failed setup or teardown an error, a failed
// collection an error of the module, and the test that started last
// without finishing an error (the run ended inside it, for the reason
// given; ended is "" for a session that finished normally).
func parseStream(data []byte, ended string) []Test {
	var out []Test
	index := map[string]int{}
	started := ""
	put := func(id string, o Outcome, d time.Duration, msg string) {
		if i, ok := index[id]; ok {
			out[i].Time += d
			if o.rank() > out[i].Outcome.rank() {
				out[i].Outcome, out[i].Message = o, msg
			}
			return
		}
		index[id] = len(out)
		out = append(out, Test{ID: id, Outcome: o, Time: d, Message: msg})
	}
	for _, line := range strings.Split(string(data), "\n") {
		var r streamRecord
		if line == "" || json.Unmarshal([]byte(line), &r) != nil {
			continue // a line cut short by a kill
		}
		if r.Start != "" {
			started = r.Start
			continue
		}
		d := time.Duration(r.Seconds * float64(time.Second))
		var o Outcome
		switch {
		case r.When == "collect":
			o = Error
		case r.Outcome == "passed":
			o = Pass
		case r.Outcome == "skipped":
			o = Skip
		case r.When == "call":
			o = Fail
		default:
			o = Error
		}
		if r.XFail && r.Outcome != "passed" {
			o = Skip
		}
		put(r.ID, o, d, r.Message)
		if r.When == "teardown" && r.ID == started {
			started = ""
		}
	}
	if started != "" && ended != "" {
		put(started, Error, 0, "the run ended during this test: "+ended)
	}
	return out
}

// withPythonPath adds dir to the PYTHONPATH of env (the last entry wins
// in the sandbox, so every PYTHONPATH entry is folded into one), after
// the paths already there so it shadows nothing.
func withPythonPath(env []string, dir string) []string {
	var paths []string
	var out []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			if v != "" {
				paths = append(paths, v)
			}
			continue
		}
		out = append(out, kv)
	}
	if dir != "" {
		paths = append(paths, dir)
	}
	if len(paths) == 0 {
		return out
	}
	return append(out, "PYTHONPATH="+strings.Join(paths, ":"))
}
