package envserver

import (
	"context"
	"fmt"

	"cwm/internal/episode"
)

// toolSnapshot is a checkpoint of a swe or shell episode: its files and
// session (episode.Checkpoint) and its state and record at that moment.
type toolSnapshot struct {
	cp    *episode.Checkpoint
	state toolEpisode
}

func (s *toolSnapshot) bytes() int64        { return s.cp.Bytes() }
func (s *toolSnapshot) depth() int          { return s.cp.Depth() }
func (s *toolSnapshot) layers() []string    { return s.cp.Layers() }
func (s *toolSnapshot) layerBytes() []int64 { return s.cp.LayerBytes() }
func (s *toolSnapshot) release()            { s.cp.Release() }

// checkpoint implements checkpointer.
func (t *toolEpisode) checkpoint(ctx context.Context) (snapshot, error) {
	if t.broken != nil {
		return nil, fmt.Errorf("the episode's sandbox failed: %w", t.broken)
	}
	cp, err := t.tb.Checkpoint(ctx)
	if err != nil {
		return nil, err
	}
	return &toolSnapshot{cp: cp, state: t.copyState()}, nil
}

// rollback implements checkpointer: the files, the session and the
// record go back to the checkpoint's; the sandbox stays the episode's.
func (t *toolEpisode) rollback(ctx context.Context, snap snapshot) error {
	s := snap.(*toolSnapshot)
	if err := t.tb.Rollback(ctx, s.cp); err != nil {
		return err
	}
	tb, ep, sb, sample := t.tb, t.ep, t.sb, t.tr.Sample
	*t = s.state.copyState()
	t.tb, t.ep, t.sb, t.tr.Sample = tb, ep, sb, sample
	return nil
}

// branchFrom implements checkpointer: a new episode on its own sandbox,
// from the checkpoint's files, session and record.
func (t *toolEpisode) branchFrom(ctx context.Context, snap snapshot) (episodeImpl, error) {
	s := snap.(*toolSnapshot)
	c := s.state.copyState()
	c.tr.Sample = t.s.traj.sample(c.tr.TaskID, nil)
	// As a clone does: a search branches one checkpoint many times, and a
	// branch that finds no warm sandbox starts one, at tens of times the
	// cost.
	t.s.warm.topUp(t.env, 1)
	if t.ep != nil {
		ep, err := t.ep.BranchFrom(ctx, s.cp)
		if err != nil {
			return nil, err
		}
		c.ep, c.tb, c.sb = ep, ep.Toolbox, nil
		return &c, nil
	}
	tb, err := t.tb.BranchFrom(ctx, s.cp)
	if err != nil {
		return nil, err
	}
	c.tb, c.sb = tb, tb.Sandbox()
	return &c, nil
}
