package export

import (
	"encoding/json"
	"strconv"

	"cwm/internal/dedup"
	"cwm/internal/model"
	"cwm/internal/sim"
	"cwm/internal/trajectory"
)

// TransitionRow is one training example of a world model or a reward
// model. A transition row is (context, command) -> (stdout, stderr, exit
// code): Messages are exactly what the sim backend sends a world model
// for that command (sim.Messages of the recorded context), Completion the
// reply it accepts, {"stdout","stderr","exit_code"} of the real run. A
// reward row is (final state) -> (test report, reward): Messages are what
// --sim-reward sends (sim.RewardMessages of the statement and the graded
// patch), Completion {"resolved","reward"} of the real grading. Trained
// on Messages -> Completion as a chat, a model answers the sim backend
// with no glue.
type TransitionRow struct {
	// ID is "TASK_ID#SAMPLE#TURN" (transition) or "TASK_ID#SAMPLE#reward".
	ID     string `json:"id" parquet:"id"`
	Kind   string `json:"kind" parquet:"kind"`
	TaskID string `json:"task_id" parquet:"task_id"`
	Sample int64  `json:"sample" parquet:"sample"`
	Turn   int64  `json:"turn" parquet:"turn"`
	Repo   string `json:"repo" parquet:"repo"`
	EnvID  string `json:"env_id" parquet:"env_id"`
	// CommandKind is the classifier's kind (transition rows).
	CommandKind string        `json:"command_kind" parquet:"command_kind"`
	Messages    []TurnMessage `json:"messages" parquet:"messages,list"`
	Completion  string        `json:"completion" parquet:"completion"`
}

func (r TransitionRow) size() int {
	n := len(r.ID) + len(r.TaskID) + len(r.Repo) + len(r.Completion) + 64
	for _, m := range r.Messages {
		n += len(m.Content) + len(m.Role) + 16
	}
	return n
}

// TransitionRows are a trajectory's training rows: one per step whose
// record holds a context and a real run (the real backend with
// --record-context, or the sim backend's corrections and fallbacks), and
// one reward row when the trajectory was graded for real.
func TransitionRows(tr *trajectory.Trajectory, repo string) []TransitionRow {
	var rows []TransitionRow
	key := tr.TaskID + "#" + strconv.Itoa(tr.Sample)
	for _, st := range tr.Steps {
		r := st.Sim
		if r == nil || r.Context == nil || r.Real == nil {
			continue
		}
		rows = append(rows, TransitionRow{ID: key + "#" + strconv.Itoa(st.Turn), Kind: "transition", TaskID: tr.TaskID,
			Sample: int64(tr.Sample), Turn: int64(st.Turn), Repo: repo, EnvID: tr.EnvID, CommandKind: r.Kind,
			Messages: turnMessages(sim.Messages(r.Context)), Completion: completion(r.Real)})
	}
	if tr.Reward != nil && tr.Resolved != nil && tr.Sim != nil && tr.Sim.Statement != "" {
		patch := tr.Patch
		if tr.SubmittedPatch != nil {
			patch = *tr.SubmittedPatch
		}
		rows = append(rows, TransitionRow{ID: key + "#reward", Kind: "reward", TaskID: tr.TaskID, Sample: int64(tr.Sample),
			Repo: repo, EnvID: tr.EnvID, Messages: turnMessages(sim.RewardMessages(tr.Sim.Statement, patch)),
			Completion: completion(sim.RewardReply{Resolved: *tr.Resolved, Reward: *tr.Reward})})
	}
	return rows
}

func turnMessages(ms []model.Message) []TurnMessage {
	out := make([]TurnMessage, len(ms))
	for i, m := range ms {
		out[i] = turnMessage(m)
	}
	return out
}

// completion is v as the one-line JSON object a sim model replies.
func completion(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func transitionRecord(withText bool) func(string, []byte) (record[TransitionRow], error) {
	return func(_ string, line []byte) (record[TransitionRow], error) {
		tr, repo, err := decodeTrajectory(line)
		if err != nil {
			return record[TransitionRow]{}, err
		}
		rows := TransitionRows(tr, repo)
		if len(rows) == 0 {
			return record[TransitionRow]{skip: "no recorded context and no real grade"}, nil
		}
		text := dedupText(withText, func() string { return dedup.Text(tr) })
		return record[TransitionRow]{repo: repo, text: text, rows: rows}, nil
	}
}
