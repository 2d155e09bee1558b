package reward

import (
	"errors"
	"fmt"

	"cwm/internal/batch"
	"cwm/internal/jsonl"
	"cwm/internal/trajectory"
)

// Prediction is a SWE-bench prediction: a model's patch for an instance.
type Prediction struct {
	InstanceID string  `json:"instance_id"`
	ModelName  string  `json:"model_name_or_path"`
	ModelPatch *string `json:"model_patch"`
}

// candidate is a line cwm reward grades, or a scored line it wrote: a cwm
// trajectory (it has task_id) or a SWE-bench prediction (instance_id),
// with the reward fields of a scored line. Which fields the line has
// tells the two apart, and whether it has a sample.
type candidate struct {
	trajectory.Trajectory
	Prediction
	isTrajectory bool
	isPrediction bool
	hasSample    bool
}

// decodeCandidate reads one line, with its members in order.
func decodeCandidate(line []byte) (candidate, []field, error) {
	var c candidate
	fields, err := objectFields(line)
	if err != nil {
		return c, nil, err
	}
	if err := jsonl.Unmarshal(line, &c); err != nil {
		return c, nil, err
	}
	c.isTrajectory, c.isPrediction, c.hasSample = has(fields, "task_id"), has(fields, "instance_id"), has(fields, "sample")
	return c, fields, nil
}

// identity returns the task id, the model and the sample of a line (-1
// when the line has no sample field), or an error for a line that is
// neither a prediction nor a trajectory.
func (c candidate) identity() (id, model string, sample int, err error) {
	sample = -1
	if c.hasSample {
		sample = c.Sample
	}
	switch {
	case c.isTrajectory:
		return c.TaskID, c.Model, sample, nil
	case c.isPrediction:
		return c.InstanceID, c.ModelName, sample, nil
	}
	return "", "", 0, errors.New("neither task_id (a trajectory) nor instance_id (a prediction)")
}

// graded returns the patch to grade and the field it came from: a
// trajectory's submitted patch, or its final diff when nothing was
// submitted; a prediction's model patch.
func (c candidate) graded() (patch, from string) {
	switch {
	case c.isTrajectory && c.SubmittedPatch != nil:
		return *c.SubmittedPatch, "submitted_patch"
	case c.isTrajectory:
		return c.Patch, "patch"
	case c.ModelPatch != nil:
		return *c.ModelPatch, "model_patch"
	}
	return "", "model_patch"
}

// groupKey names a task's samples of one model; lineKey one sample.
func groupKey(id, model string) string       { return model + "\x00" + id }
func lineKey(id, model string, n int) string { return fmt.Sprintf("%s\x00%s\x00%d", model, id, n) }

// Stage is cwm reward as a batch stage: a scored line is keyed by its
// task, model and sample; its item, which decided its shard, is its task
// group.
var Stage = batch.Stage{Name: "reward", LineKey: scoredLine, ItemKey: scoredGroup}

func scoredLine(line []byte) (string, error) {
	k, _, err := scoredKeys(line)
	return k, err
}

func scoredGroup(line []byte) (string, error) {
	_, g, err := scoredKeys(line)
	return g, err
}

// scoredKeys are the keys of a line cwm reward wrote: the line's own (task,
// model and sample) and its task group's (task and model), by which the
// stage shards its input. cwm merge checks shard outputs with them.
func scoredKeys(line []byte) (key, group string, err error) {
	c, _, err := decodeCandidate(line)
	if err != nil {
		return "", "", err
	}
	id, model, sample, err := c.identity()
	if err != nil {
		return "", "", err
	}
	if sample < 0 {
		return "", "", fmt.Errorf("line of task %s has no sample: not written by cwm reward", id)
	}
	return lineKey(id, model, sample), groupKey(id, model), nil
}
