package tracer

import (
	"cwm/internal/batch"
	"cwm/internal/jsonl"
	"cwm/internal/lazyre"
)

// The trace commands as batch stages.
var (
	// FuncStage writes a line per function (its id) and one per fuzzed
	// or model-written input (Fuzz's "<id>/fuzz-<k>", "<id>/model-<k>"),
	// whose item is the function.
	FuncStage = batch.Stage{Name: "trace func", LineKey: jsonl.Field("id"), ItemKey: funcItem, Expected: inputFuncs}
	// RepoStage's episodes are cut from a test's recording, the item that
	// decided their shard; a test may give none.
	RepoStage = batch.Stage{Name: "trace repo", LineKey: jsonl.Field("id"), ItemKey: jsonl.Field("test")}
)

// fuzzSuffix ends the ids of fuzzed and model-written inputs:
// "<id>/fuzz-<k>", "<id>/model-<k>".
var fuzzSuffix = lazyre.New(`/(fuzz|model)-[0-9]+$`)

// funcItem is the function a trace func line came from.
func funcItem(line []byte) (string, error) {
	id, err := jsonl.Field("id")(line)
	return fuzzSuffix().ReplaceAllString(id, ""), err
}

// inputFuncs are the ids of the functions of the input files.
func inputFuncs(inputs []string, _ map[string]string) ([]string, error) {
	var keys []string
	for _, in := range inputs {
		funcs, err := ReadFuncs(in)
		if err != nil {
			return nil, err
		}
		for _, f := range funcs {
			keys = append(keys, f.ID)
		}
	}
	return keys, nil
}
