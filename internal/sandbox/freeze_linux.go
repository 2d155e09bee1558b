package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// Init's side of checkpoints. A checkpoint freezes the upper layer: its
// tmpfs stays mounted, now as the topmost lower layer, and a fresh upper
// layer goes on top. Nothing is copied, so freezing costs the same however
// much was written. The host gets the frozen tmpfs as a detached mount and
// keeps it (checkpoint.go); stacking puts such layers, passed back as
// detached mounts, under a fresh upper layer (rollback, branch).

// frozenLayer is a frozen layer mounted in init's root: a tmpfs at dir
// whose upper directory was an upper layer; id is the host's name for it.
type frozenLayer struct {
	id, dir string
}

// lowerDirsOf is the overlay's lower directories of frozen layers.
func lowerDirsOf(frozen []frozenLayer) []string {
	out := make([]string, len(frozen))
	for i, l := range frozen {
		out[i] = l.dir + "/upper"
	}
	return out
}

// freeze kills every command and freezes the current upper layer under a
// fresh one, generation gen. It returns the generation mounted and the
// frozen layer's tmpfs as a detached mount, or no file when nothing was
// written since the last freeze (the checkpoint is then the frozen layers
// as they are).
func (in *initState) freeze(gen int, id string) (int, *os.File, error) {
	if in.setup.State != nil {
		return 0, nil, errors.New("checkpoints need upper layers on tmpfs (Linux 6.6)")
	}
	in.killAll()
	in.startMu.Lock()
	defer in.startMu.Unlock()
	in.mu.Lock()
	cur, frozen := in.gen, in.frozen
	in.mu.Unlock()
	g := genDir(cur)
	if isEmptyDir(g + "/upper") {
		return cur, nil, nil
	}
	if gen == cur || exists(genDir(gen)) {
		return cur, nil, fmt.Errorf("freeze into generation %d: it exists", gen)
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, g, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return cur, nil, fmt.Errorf("copy the mount of the upper layer: %w", err)
	}
	f := os.NewFile(uintptr(fd), "frozen")
	if err := tmpfsPlan(in.setup, gen).run(); err != nil {
		f.Close()
		return cur, nil, err
	}
	if err := in.swap(cur, gen, append([]frozenLayer{{id, g}}, frozen...), true); err != nil {
		f.Close()
		return gen, nil, err
	}
	return gen, f, nil
}

// stack kills every command and mounts a fresh upper layer, generation
// gen (or the one prepared with a copy), over the frozen layers ids (topmost first): those init has mounted
// already are used as they are (a rollback of the sandbox), the others
// come as detached mounts, in order (a branch).
func (in *initState) stack(gen int, ids []string, files []*os.File) (int, error) {
	defer closeAll(files)
	if len(ids) > maxFrozen {
		return 0, fmt.Errorf("%d frozen layers exceed %d", len(ids), maxFrozen)
	}
	in.killAll()
	in.startMu.Lock()
	defer in.startMu.Unlock()
	in.mu.Lock()
	cur, had := in.gen, in.frozen
	in.mu.Unlock()
	if gen == cur {
		return cur, fmt.Errorf("stack generation %d: it is the current one", gen)
	}
	// A prepared generation holds a copy of an upper layer (Clone's).
	prepared := exists(genDir(gen))
	var frozen, attached []frozenLayer
	fail := func(err error) (int, error) {
		for _, l := range attached {
			in.dropMount(l.dir)
		}
		return cur, err
	}
	for _, id := range ids {
		if i := slices.IndexFunc(had, func(l frozenLayer) bool { return l.id == id }); i >= 0 {
			frozen = append(frozen, had[i])
			continue
		}
		if len(files) == 0 {
			return fail(fmt.Errorf("frozen layer %s: not mounted, and no mount passed", id))
		}
		f := files[0]
		files = files[1:]
		in.mounted++
		d := fmt.Sprintf("/f%d", in.mounted)
		if err := unix.Mkdir(d, 0o755); err != nil {
			return fail(fmt.Errorf("create %s: %w", d, err))
		}
		if err := unix.MoveMount(int(f.Fd()), "", unix.AT_FDCWD, d, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			unix.Rmdir(d)
			return fail(fmt.Errorf("attach frozen layer at %s: %w", d, err))
		}
		l := frozenLayer{id, d}
		attached = append(attached, l)
		frozen = append(frozen, l)
	}
	if !prepared {
		if err := tmpfsPlan(in.setup, gen).run(); err != nil {
			return fail(err)
		}
	}
	return gen, in.swap(cur, gen, frozen, false)
}
