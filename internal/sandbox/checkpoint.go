package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Checkpoints. A checkpoint freezes the sandbox's upper layer as a
// read-only layer and stacks a fresh upper layer on it, so its cost does
// not grow with what was written. The frozen layer is a tmpfs that the
// host keeps mounted at <run dir>/frozen/<id> for as long as a checkpoint
// or a sandbox stands on it (reference counts); rollback and branch mount
// a fresh upper layer over a checkpoint's layers. Layers live in memory:
// their bytes are counted (Checkpoint.Bytes) for the caller's caps.

// CompactDepth is how many frozen layers a sandbox stands on before a
// checkpoint merges them into one. overlayfs refuses more than 500 lower
// layers (and the mount options must fit a page), and every lookup of a
// name a layer lacks walks the ones below: merging early keeps lookups
// short, at the price of one copy every CompactDepth checkpoints.
const CompactDepth = 16

// maxFrozen bounds the frozen layers init stacks at once, far below
// overlayfs's 500: compaction keeps stacks at CompactDepth.
const maxFrozen = 64

// layer is a frozen upper layer: a tmpfs mounted at path in the host's
// mount namespace, its files in path/upper.
type layer struct {
	id    string
	path  string
	bytes int64
	refs  int // guarded by the runtime's layerMu
}

// layers is the runtime's registry of frozen layers.
type layers struct {
	mu  sync.Mutex
	all map[string]*layer
}

func (rt *Runtime) ref(ls []*layer) {
	rt.frozen.mu.Lock()
	defer rt.frozen.mu.Unlock()
	for _, l := range ls {
		l.refs++
	}
}

// unref drops one reference to each layer; a layer nobody uses is
// unmounted, its memory freed once no sandbox's overlay holds it.
func (rt *Runtime) unref(ls []*layer) {
	rt.frozen.mu.Lock()
	var gone []*layer
	for _, l := range ls {
		if l.refs--; l.refs == 0 {
			delete(rt.frozen.all, l.id)
			gone = append(gone, l)
		}
	}
	rt.frozen.mu.Unlock()
	for _, l := range gone {
		dropLayer(l.path)
	}
}

// dropLayer unmounts a frozen layer's tmpfs and removes its mount point.
func dropLayer(p string) {
	unix.Unmount(p, unix.MNT_DETACH)
	os.Remove(p)
}

// dropAllLayers unmounts every frozen layer under the run directory dir,
// the runtime's own at Close and a dead cwm's at Reap.
func dropAllLayers(dir string) {
	ents, _ := os.ReadDir(filepath.Join(dir, "frozen"))
	for _, e := range ents {
		dropLayer(filepath.Join(dir, "frozen", e.Name()))
	}
}

// LayerCount is how many frozen layers the runtime holds.
func (rt *Runtime) LayerCount() int {
	rt.frozen.mu.Lock()
	defer rt.frozen.mu.Unlock()
	return len(rt.frozen.all)
}

// newLayerDir makes the mount point of a new frozen layer.
func (rt *Runtime) newLayerDir(id string) (*layer, error) {
	run, err := rt.runDir()
	if err != nil {
		return nil, err
	}
	l := &layer{id: id}
	l.path = filepath.Join(run, "frozen", l.id)
	if err := os.MkdirAll(l.path, 0o700); err != nil {
		return nil, fmt.Errorf("create frozen layer directory: %w", err)
	}
	return l, nil
}

// adoptLayer mounts the detached mount f (a frozen tmpfs) in the host's
// namespace, read-only, and registers it with no reference.
func (rt *Runtime) adoptLayer(f *os.File, id string) (*layer, error) {
	defer f.Close()
	l, err := rt.newLayerDir(id)
	if err != nil {
		return nil, err
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(int(f.Fd()), "", unix.AT_EMPTY_PATH, &attr); err != nil {
		os.Remove(l.path)
		return nil, fmt.Errorf("make frozen layer read-only: %w", err)
	}
	if err := unix.MoveMount(int(f.Fd()), "", unix.AT_FDCWD, l.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		os.Remove(l.path)
		return nil, fmt.Errorf("mount frozen layer: %w", err)
	}
	rt.register(l)
	return l, nil
}

func (rt *Runtime) register(l *layer) {
	var st unix.Statfs_t
	if unix.Statfs(l.path, &st) == nil {
		l.bytes = int64(st.Blocks-st.Bfree) * st.Bsize
	}
	rt.frozen.mu.Lock()
	defer rt.frozen.mu.Unlock()
	if rt.frozen.all == nil {
		rt.frozen.all = map[string]*layer{}
	}
	rt.frozen.all[l.id] = l
}

// detachLayers makes a read-only detached copy of each layer's mount, for
// init to attach.
func detachLayers(ls []*layer) ([]*os.File, error) {
	var files []*os.File
	for _, l := range ls {
		fd, err := unix.OpenTree(unix.AT_FDCWD, l.path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			closeAll(files)
			return nil, fmt.Errorf("copy the mount of frozen layer %s: %w", l.id, err)
		}
		files = append(files, os.NewFile(uintptr(fd), l.id))
	}
	return files, nil
}

// Checkpoint is a state of a sandbox's files to roll back or branch to:
// the frozen layers it stands on. It holds them until Release.
type Checkpoint struct {
	rt     *Runtime
	layers []*layer // topmost first
	once   sync.Once
	spare  spare // the next BranchShell made ahead
}

// Depth is how many frozen layers the checkpoint stands on.
func (c *Checkpoint) Depth() int { return len(c.layers) }

// Bytes is the memory the checkpoint's layers take (shared with other
// checkpoints that stand on the same ones).
func (c *Checkpoint) Bytes() int64 {
	var n int64
	for _, l := range c.layers {
		n += l.bytes
	}
	return n
}

// Layers names the checkpoint's frozen layers, topmost first: two
// checkpoints share memory where they share names.
func (c *Checkpoint) Layers() []string {
	out := make([]string, len(c.layers))
	for i, l := range c.layers {
		out[i] = l.id
	}
	return out
}

// LayerBytes is the memory each of its layers takes, in Layers' order.
func (c *Checkpoint) LayerBytes() []int64 {
	out := make([]int64, len(c.layers))
	for i, l := range c.layers {
		out[i] = l.bytes
	}
	return out
}

// Release drops the checkpoint's hold on its layers, and its spare
// branch. It is idempotent.
func (c *Checkpoint) Release() {
	c.once.Do(func() {
		c.dropSpare()
		c.rt.unref(c.layers)
	})
}

// Checkpoint kills every command in the sandbox, freezes its upper layer
// and stacks a fresh one on it; the sandbox goes on from there with its
// files as they were. When the sandbox then stands on more than
// CompactDepth frozen layers they are merged into one (a copy).
func (s *Sandbox) Checkpoint(ctx context.Context) (*Checkpoint, error) {
	if !s.alive() {
		return nil, ErrDead
	}
	if s.rt.upperOnDisk {
		return nil, errors.New("checkpoint sandbox: checkpoints need upper layers on tmpfs (Linux 6.6)")
	}
	s.mu.Lock()
	gen := s.gen + 1
	s.mu.Unlock()
	id := randomHex(8)
	r, err := s.call(ctx, request{Op: "freeze", Gen: gen, Layer: id})
	if err != nil {
		return nil, fmt.Errorf("checkpoint sandbox: %w", err)
	}
	var l *layer
	if len(r.files) == 1 {
		if l, err = s.rt.adoptLayer(r.files[0], id); err != nil {
			return nil, fmt.Errorf("checkpoint sandbox: %w", err)
		}
		s.rt.ref([]*layer{l})
	}
	s.mu.Lock()
	s.gen = r.Gen
	if l != nil {
		s.stack = append([]*layer{l}, s.stack...)
	}
	stack := slices.Clone(s.stack)
	s.mu.Unlock()
	if len(stack) > CompactDepth {
		merged, err := s.rt.compact(stack, s.cfg.Limits.Disk)
		if err != nil {
			return nil, fmt.Errorf("checkpoint sandbox: compact %d frozen layers: %w", len(stack), err)
		}
		s.rt.ref([]*layer{merged})
		c := &Checkpoint{rt: s.rt, layers: []*layer{merged}}
		if err := s.Rollback(ctx, c); err != nil {
			c.Release()
			return nil, fmt.Errorf("checkpoint sandbox: %w", err)
		}
		return c, nil
	}
	s.rt.ref(stack)
	return &Checkpoint{rt: s.rt, layers: stack}, nil
}

// Rollback kills every command in the sandbox and brings its files back to
// the checkpoint: a fresh upper layer over the checkpoint's layers. The
// checkpoint stays valid.
func (s *Sandbox) Rollback(ctx context.Context, c *Checkpoint) error {
	return s.rollback(ctx, c, nil)
}

// rollback is Rollback; then, when set, runs as soon as init has the
// request (see callThen).
func (s *Sandbox) rollback(ctx context.Context, c *Checkpoint, then func()) error {
	if c.rt != s.rt {
		return errors.New("roll back sandbox: the checkpoint is another runtime's")
	}
	if err := s.stackOn(ctx, c.layers, nil, then); err != nil {
		return fmt.Errorf("roll back sandbox: %w", err)
	}
	return nil
}

// stackOn kills every command and mounts a fresh upper layer, a copy of
// seed when set (an upper layer's directory, Clone's), over the frozen
// layers ls. then, when set, runs once init has the request to mount them
// (callThen).
func (s *Sandbox) stackOn(ctx context.Context, ls []*layer, seed *os.File, then func()) error {
	if !s.alive() {
		return ErrDead
	}
	// Layers the sandbox stands on are mounted in it already: only the
	// others are passed.
	s.mu.Lock()
	gen := s.gen + 1
	var pass []*layer
	for _, l := range ls {
		if !slices.Contains(s.stack, l) {
			pass = append(pass, l)
		}
	}
	s.mu.Unlock()
	if seed != nil {
		if _, err := s.call(ctx, request{Op: "prepare", Gen: gen}, seed); err != nil {
			return fmt.Errorf("copy upper layer: %w", err)
		}
	}
	files, err := detachLayers(pass)
	if err != nil {
		return err
	}
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.id
	}
	r, err := s.callThen(ctx, request{Op: "stack", Gen: gen, Layers: ids}, then, files...)
	closeAll(files)
	if err != nil {
		return err
	}
	s.rt.ref(ls)
	s.mu.Lock()
	s.gen = r.Gen
	old := s.stack
	s.stack = slices.Clone(ls)
	s.mu.Unlock()
	s.rt.unref(old)
	return nil
}

// Branch returns a new sandbox with the same configuration whose files
// are the checkpoint's: its own fresh upper layer over the checkpoint's
// frozen layers, which it shares. Nothing is copied.
func (s *Sandbox) Branch(ctx context.Context, c *Checkpoint) (*Sandbox, error) {
	return s.fork(ctx, func(n *Sandbox) error { return n.Rollback(ctx, c) })
}

// BranchShell is Branch and the new sandbox's Shell in one. Starting a
// bash session is most of what a branch costs otherwise: a round trip to
// init that waits for init to tear down the overlay the warm sandbox had.
// Here the session's start is sent right behind the request to mount the
// checkpoint's layers, and init starts bash on the new overlay before that
// teardown (afterReply), so the two overlap. The session starts as Shell's
// does, in the new sandbox, after its files are the checkpoint's. After
// the first, the checkpoint keeps the next branch made ahead (spare.go).
func (s *Sandbox) BranchShell(ctx context.Context, c *Checkpoint, opts ShellOptions) (*Sandbox, *Shell, error) {
	if !s.alive() {
		return nil, nil, ErrDead
	}
	n, sh := c.takeSpare(s.cfg, opts)
	if n == nil {
		var err error
		if n, sh, err = s.rt.branchShell(ctx, s.cfg, s.key, c, opts); err != nil {
			return nil, nil, err
		}
	}
	c.makeSpare(s, opts)
	return n, sh, nil
}

// branchShell makes BranchShell's sandbox and session for a sandbox of
// configuration cfg (whose key is key).
func (rt *Runtime) branchShell(ctx context.Context, cfg Config, key string, c *Checkpoint, opts ShellOptions) (*Sandbox, *Shell, error) {
	var sh *Shell
	n, err := rt.fork(ctx, cfg, key, func(n *Sandbox) error {
		// A warm sandbox has another's environment and directory until
		// fork gives it cfg, after this: the session's are cfg's.
		n.cfg = cfg
		sh = n.newShell(opts)
		var sendErr error
		if err := n.rollback(ctx, c, func() { sendErr = sh.send() }); err != nil {
			if sendErr == nil {
				sh.abandon() // fork destroys n, and bash if init started it
			}
			return err
		}
		if sendErr != nil {
			return sendErr
		}
		return sh.started(ctx)
	})
	if err != nil {
		return nil, nil, err
	}
	return n, sh, nil
}

// dropStack forgets the frozen layers the sandbox stood on: a reset or
// the end of the sandbox.
func (s *Sandbox) dropStack() {
	s.mu.Lock()
	old := s.stack
	s.stack = nil
	s.mu.Unlock()
	s.rt.unref(old)
}

// noStack refuses what reads the upper layer alone as the sandbox's
// changes (Changes, Snapshot) once frozen layers lie under it.
func (s *Sandbox) noStack(what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.stack) > 0 {
		return fmt.Errorf("%s: the sandbox stands on a checkpoint's frozen layers, not its upper layer alone", what)
	}
	return nil
}
