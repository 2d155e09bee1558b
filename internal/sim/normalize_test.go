package sim

import (
	"testing"

	"cwm/internal/model"
	"cwm/internal/trajectory"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ a, b string }{
		{"===== 2 passed in 0.05s =====", "========== 2 passed in 1.30s =========="},
		{"Ran 2 tests in 0.001s\n\nOK", "Ran 2 tests in 0.412s\nOK"},
		{"<object at 0x7f3a2b1c9d00>", "<object at 0x7ffe00112233>"},
		{"wrote /tmp/pytest-of-root/pytest-0/x.txt", "wrote /tmp/tmpab12cd/x.txt"},
		{"a   b\t c  \n", "a b c"},
	}
	for _, tt := range tests {
		if Normalize(tt.a) != Normalize(tt.b) {
			t.Errorf("Normalize(%q) = %q, Normalize(%q) = %q: want equal", tt.a, Normalize(tt.a), tt.b, Normalize(tt.b))
		}
	}
	for _, d := range [][2]string{{"2 passed", "1 passed, 1 failed"}, {"exit 0", "exit 1"}, {"/repo/a.py", "/repo/b.py"}} {
		if Normalize(d[0]) == Normalize(d[1]) {
			t.Errorf("Normalize(%q) = Normalize(%q): want different", d[0], d[1])
		}
	}
}

func TestParseReply(t *testing.T) {
	tests := []struct {
		in      string
		want    *trajectory.Execution
		wantErr bool
	}{
		{in: `{"stdout":"42\n","stderr":"","exit_code":0}`, want: &trajectory.Execution{Stdout: "42\n"}},
		{in: "```json\n{\"stdout\":\"\",\"stderr\":\"boom\",\"exit_code\":1}\n```", want: &trajectory.Execution{Stderr: "boom", ExitCode: 1}},
		{in: `{"stdout":"","stderr":""}`, wantErr: true},
		{in: `{"stdout":"","stderr":"","exit_code":256}`, wantErr: true},
		{in: `{"stdout":"","stderr":"","exit_code":0} and more`, wantErr: true},
		{in: `{"stdout":1,"stderr":"","exit_code":0}`, wantErr: true},
		{in: `it prints 42`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseReply(tt.in)
		if (err != nil) != tt.wantErr || !cmp.Equal(got, tt.want) {
			t.Errorf("ParseReply(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestMessagesBounded: whatever the context holds, its parts are cut to
// their bounds, the cuts are named, and cutting again changes nothing.
func TestMessagesBounded(t *testing.T) {
	var notes []string
	long := string(make([]byte, 100<<10))
	s := cut(&notes, "diff", long, maxDiff)
	if len(s) != maxDiff || cut(&notes, "diff", s, maxDiff) != s {
		t.Errorf("cut to %d bytes, again %d; want %d both times", len(s), len(cut(&notes, "diff", s, maxDiff)), maxDiff)
	}
	c := &trajectory.SimContext{Statement: "s", Diff: s, Cwd: "/repo", Command: "python3 a.py", Truncated: notes,
		Files: []trajectory.SimFile{{Path: "/repo/a.py", Source: "print(1)"}}}
	msgs := Messages(c)
	want := []model.Message{{Role: model.RoleSystem, Content: systemPrompt}}
	if !cmp.Equal(msgs[:1], want) || len(msgs) != 2 || len(msgs[1].Content) > maxDiff+1024 {
		t.Errorf("Messages gave %d messages, the user's %d bytes", len(msgs), len(msgs[1].Content))
	}
}

func TestParseRewardReply(t *testing.T) {
	tests := []struct {
		in      string
		want    RewardReply
		wantErr bool
	}{
		{in: `{"resolved": true, "reward": 1}`, want: RewardReply{Resolved: true, Reward: 1}},
		{in: "```json\n{\"resolved\": false, \"reward\": -1}\n```", want: RewardReply{Reward: -1}},
		{in: `{"resolved": true}`, wantErr: true},
		{in: `{"resolved": "yes", "reward": 1}`, wantErr: true},
		{in: `{"resolved": true, "reward": 1, "why": "tests pass"}`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseRewardReply(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseRewardReply(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
