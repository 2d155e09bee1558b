package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputErrors checks how commands report bad input files: the
// location once, a field of the wrong type by name and the type wanted,
// and a last line cut off (no newline, not valid JSON) as an error naming
// the line, never skipped as a resumable output's torn line would be.
func TestInputErrors(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"instance_id": "a", "env_id": "e", "FAIL_TO_PASS": ["t1"], "PASS_TO_PASS": []}`
	wrongType := file("tasks.jsonl", good+"\n"+`{"instance_id": "b", "env_id": "e", "FAIL_TO_PASS": 7}`+"\n")
	torn := file("torn.jsonl", good+"\n"+`{"instance_id": "b", "env_`)
	missing := filepath.Join(dir, "missing.jsonl")
	preds := file("preds.jsonl", `{"instance_id": "a", "model_patch": ""}`+"\n")
	tornPreds := file("tornpreds.jsonl", `{"instance_id": "a", "model_patch": ""}`+"\n"+`{"instance_id": "a", "model_pa`)
	tornTraces := file("traces.jsonl", `{"id": "x", "status": "error", "error": "why"}`+"\n"+`{"id": "y", "sta`)
	funcs := file("funcs.jsonl", `{"id": "f1", "code": "def f(x):\n    return x", "input": 3}`+"\n")
	tornFuncs := file("tornfuncs.jsonl", `{"id": "f1", "code": "def f(x):\n    return x", "input": "3"}`+"\n"+`{"id": "f2", "co`)
	out := filepath.Join(dir, "out.jsonl")
	forage := []string{"forage", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--out", out, "--tasks"}
	reward := []string{"reward", "--in", preds, "--out", out, "--tasks"}

	const wantType = `tasks.jsonl:2: field "FAIL_TO_PASS": want a list of test ids or a JSON string holding one, got 7`
	const wantTorn = `torn.jsonl:2: the last line is cut off`
	cases := []struct {
		name string
		args []string
		code int
		want string // substring of stderr, which must name its location once
	}{
		{"validate wrong type", []string{"tasks", "validate", wrongType}, 1, wantType},
		{"forage wrong type", append(forage, wrongType), 1, wantType},
		{"reward wrong type", append(reward, wrongType), 1, wantType},
		{"validate torn", []string{"tasks", "validate", torn}, 1, wantTorn},
		{"forage torn", append(forage, torn), 1, wantTorn},
		{"reward torn tasks", append(reward, torn), 1, wantTorn},
		{"validate missing", []string{"tasks", "validate", missing}, 1, "no such file"},
		{"reward torn input", []string{"reward", "--tasks", file("ok.jsonl", good+"\n"), "--in", tornPreds, "--out", out}, 1,
			"tornpreds.jsonl:2: the last line is cut off"},
		{"trace check torn", []string{"trace", "check", tornTraces}, 1, "line 2: the last line is cut off"},
		{"trace func wrong type", []string{"trace", "func", "--in", funcs, "--out", out}, 1, `funcs.jsonl:1: field "input": want a string, got a number`},
		{"trace func torn", []string{"trace", "func", "--in", tornFuncs, "--out", out}, 1, "tornfuncs.jsonl:2: the last line is cut off"},
		{"dedup torn", []string{"dedup", "--in", tornPreds, "--out", out}, 1, "tornpreds.jsonl:2: the last line is cut off"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", c.args...)
			all := stdout + stderr
			if code != c.code || !strings.Contains(all, c.want) {
				t.Fatalf("cwm %s = %d, %q; want %d and %q", strings.Join(c.args, " "), code, all, c.code, c.want)
			}
			if loc, _, ok := strings.Cut(c.want, " "); ok && strings.HasSuffix(loc, ":") && strings.Count(all, loc) != 1 {
				t.Errorf("cwm %s output names %s %d times, want once: %q", strings.Join(c.args, " "), loc, strings.Count(all, loc), all)
			}
		})
	}
}
