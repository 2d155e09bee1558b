package reward

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Normalize returns the normalized change of every text file of a patch,
// as CWM's get_normalized_file_patch computes it:
//
//   - a file's change is its hunks, each printed as unidiff prints it
//     (see Hunk.String: the @@ line with its line numbers and section,
//     then the body lines) and stripped, joined with "\n";
//   - a rename (see PatchedFile.IsRename) is preceded by the line
//     "rename from OLD to NEW" (a/ and b/ removed) and keyed by OLD;
//     other files are keyed by PatchedFile.Path;
//   - the whole is stripped of surrounding whitespace as Python's
//     str.strip does, so a file without hunks (a mode change, an empty
//     new file) has the empty change;
//   - binary files are left out; a later file with the same key replaces
//     an earlier one.
//
// The error wraps ErrPatch or ErrPatchCrash when unidiff would reject the
// patch.
func Normalize(patch string) (map[string]string, error) {
	files, err := ParsePatch(patch)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(files))
	for _, f := range files {
		if f.Binary {
			continue
		}
		header, path := "", f.Path()
		if f.IsRename() {
			from := strings.TrimPrefix(f.SourceFile, "a/")
			to := strings.TrimPrefix(f.TargetFile, "b/")
			header, path = "rename from "+from+" to "+to, from
		}
		hunks := make([]string, len(f.Hunks))
		for i, h := range f.Hunks {
			hunks[i] = pyStrip(h.String())
		}
		out[path] = pyStrip(header + "\n" + strings.Join(hunks, "\n"))
	}
	return out, nil
}

// pyStrip is Python's str.strip(): it also removes U+001C to U+001F,
// which Go's unicode.IsSpace does not count as space.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
	})
}

// Score is the similarity of a predicted patch to the oracle patch.
type Score struct {
	// Mean is the mean of PerFile.
	Mean float64 `json:"similarity"`
	// PerFile holds the score of every file of the oracle patch (keyed as
	// Normalize keys them).
	PerFile map[string]float64 `json:"per_file"`
	// Ignored lists the files the prediction changes that the oracle does
	// not: CWM leaves them out of the score.
	Ignored []string `json:"ignored_files,omitempty"`
	// PredictedError says why the prediction's files could not be read, if
	// they could not; every oracle file then scores 0.
	PredictedError string `json:"predicted_error,omitempty"`
}

// ErrNoOracleFiles is returned by Similarity when the oracle patch has no
// text file to compare with: CWM then has no similarity (and its reward
// is the lowest).
var ErrNoOracleFiles = errors.New("oracle patch changes no text file")

// Similarity is CWM's patch similarity (CWM-SPEC 2.3; CWM's
// calculate_similarities_unidiff with ignore_non_oracle_files=True): each
// file of the oracle patch scores difflib's ratio of the normalized
// changes, the prediction as a and the oracle as b (the ratio is not
// symmetric), or 0 when either change is empty or the prediction does not
// change the file; files only the prediction changes are ignored; the
// score is the mean over the oracle's files. So touching extra files costs
// nothing, and missing one of the oracle's costs its share.
//
// The sum runs in sorted path order, so the score is reproducible (CWM
// sums in Python's set order, which varies between processes in the last
// bit). A prediction that does not parse scores 0, with the reason in
// Score.PredictedError. An oracle that does not parse or yields no file
// is an error of the task.
func Similarity(predicted, oracle string) (Score, error) {
	want, err := Normalize(oracle)
	if err != nil {
		return Score{}, fmt.Errorf("parse oracle patch: %w", err)
	}
	if len(want) == 0 {
		return Score{}, ErrNoOracleFiles
	}
	var s Score
	got, err := Normalize(predicted)
	if err != nil {
		s.PredictedError = err.Error()
		got = nil
	}
	paths := make([]string, 0, len(want))
	for path := range want {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	s.PerFile = make(map[string]float64, len(want))
	sum := 0.0
	for _, path := range paths {
		score := 0.0
		if g, w := got[path], want[path]; g != "" && w != "" {
			score = Ratio(g, w)
		}
		s.PerFile[path] = score
		sum += score
	}
	s.Mean = sum / float64(len(paths))
	for path := range got {
		if _, ok := want[path]; !ok {
			s.Ignored = append(s.Ignored, path)
		}
	}
	sort.Strings(s.Ignored)
	return s, nil
}
