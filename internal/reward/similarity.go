package reward

import (
	"fmt"
	"sort"
	"strings"
)

// Normalize returns the normalized change of every file of a unified diff,
// keyed by Path. It is the text the similarity compares, chosen so that
// two patches making the same change compare equal whichever tool or
// repository produced them:
//
//   - each hunk becomes the line "@@" (line numbers and git's function
//     context dropped: they depend on unrelated edits above the hunk and
//     on the diff tool), followed by its body lines with their ' ', '-' or
//     '+' marker;
//   - "\ No newline at end of file" markers are dropped (SWE-RL's
//     normalized diffs, built from splitlines, cannot show them);
//   - file headers (diff --git, index, ---, +++) are dropped;
//   - a file without hunks (pure rename, mode change, empty new file,
//     binary file) is its extended header lines instead, except index and
//     similarity lines, so that it still has a change to compare;
//   - lines are joined with "\n", without a final newline.
func Normalize(patch string) (map[string]string, error) {
	files, err := ParseDiff(patch)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(files))
	for _, f := range files {
		var lines []string
		for _, h := range f.Hunks {
			lines = append(lines, "@@")
			for _, l := range h.Lines {
				if !strings.HasPrefix(l, `\`) {
					lines = append(lines, l)
				}
			}
		}
		if len(f.Hunks) == 0 {
			for _, l := range f.Header {
				if !strings.HasPrefix(l, "similarity index ") && !strings.HasPrefix(l, "dissimilarity index ") {
					lines = append(lines, l)
				}
			}
		}
		out[f.Path()] = strings.Join(lines, "\n")
	}
	return out, nil
}

// Similarity is the patch-similarity shaping of CWM-SPEC 2.3: "per file of
// the oracle patch, difflib.SequenceMatcher(autojunk=False).ratio() of the
// normalized hunks, files missing on one side score 0, averaged".
//
// "Files missing on one side" is read as SWE-RL's reward does it (its
// compute_change_similarities): the files are the union of those the two
// patches change, a file changed by only one of them scores 0, and the mean
// is over the union, so touching extra files lowers the score. A file in
// both scores the ratio of the normalized texts as character sequences,
// with the prediction as difflib's a and the oracle as b (SWE-RL's order;
// the ratio is not symmetric). perFile holds every file's score.
//
// An oracle that does not parse or changes nothing is an error of the task.
// A predicted patch that does not parse is an error too; graders should
// record it as a result with that reason. An empty prediction scores 0.
func Similarity(predicted, oracle string) (score float64, perFile map[string]float64, err error) {
	want, err := Normalize(oracle)
	if err != nil {
		return 0, nil, fmt.Errorf("parse oracle patch: %w", err)
	}
	if len(want) == 0 {
		return 0, nil, fmt.Errorf("oracle patch changes no files")
	}
	got, err := Normalize(predicted)
	if err != nil {
		return 0, nil, fmt.Errorf("parse predicted patch: %w", err)
	}
	perFile = make(map[string]float64, len(want)+len(got))
	for path := range want {
		perFile[path] = 0
	}
	for path := range got {
		perFile[path] = 0
	}
	paths := make([]string, 0, len(perFile))
	for path := range perFile {
		paths = append(paths, path)
	}
	// A fixed order makes the floating-point sum, and so the score,
	// reproducible.
	sort.Strings(paths)
	for _, path := range paths {
		g, inGot := got[path]
		w, inWant := want[path]
		if inGot && inWant && g != "" && w != "" {
			perFile[path] = Ratio(g, w)
		}
		score += perFile[path]
	}
	return score / float64(len(paths)), perFile, nil
}
