package traceline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/errkind"
)

func TestLoad(t *testing.T) {
	frame := `[{}]`
	tests := []struct {
		name    string
		lines   []string
		ids     []string
		skipped int
		wantErr errkind.Kind
	}{
		{name: "complete kept, others skipped",
			lines: []string{
				`{"id":"a","status":"ok","frames":` + frame + `}`,
				`{"id":"b","status":"exception","frames":` + frame + `}`,
				`{"id":"c","status":"timeout","frames":` + frame + `}`,
				`{"id":"d","status":"ok","frames":[]}`,
			},
			ids: []string{"a", "b"}, skipped: 2},
		{name: "no id", lines: []string{`{"status":"ok","frames":` + frame + `}`}, wantErr: errkind.Input},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "traces.jsonl")
			if err := os.WriteFile(p, []byte(strings.Join(tt.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			lines, skipped, err := Load(p)
			if tt.wantErr != 0 {
				if errkind.Of(err) != tt.wantErr {
					t.Fatalf("Load: err %v, want kind %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, l := range lines {
				ids = append(ids, l.ID)
			}
			if diff := cmp.Diff(tt.ids, ids); diff != "" || skipped != tt.skipped {
				t.Errorf("ids (-want +got):\n%s\nskipped %d, want %d", diff, skipped, tt.skipped)
			}
		})
	}
}

// TestSource: where an input came from, for lines written before
// input_source existed too.
func TestSource(t *testing.T) {
	frame := `[{}]`
	lines := []string{
		`{"id":"a","status":"ok","frames":` + frame + `,"fuzz_of":""}`,
		`{"id":"a/fuzz-1","status":"ok","frames":` + frame + `,"fuzz_of":"a"}`,
		`{"id":"b","status":"ok","frames":` + frame + `,"input_source":"given","fuzz_of":""}`,
		`{"id":"b/model-1","status":"ok","frames":` + frame + `,"input_source":"model","fuzz_of":"b"}`,
		`{"id":"b/fuzz-1","status":"ok","frames":` + frame + `,"input_source":"fuzz","fuzz_of":"b"}`,
	}
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	var sources []Source
	for _, l := range got {
		sources = append(sources, l.Source())
	}
	if diff := cmp.Diff([]Source{Given, Fuzz, Given, Model, Fuzz}, sources); diff != "" {
		t.Errorf("Source (-want +got):\n%s", diff)
	}
}
