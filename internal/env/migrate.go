package env

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// migrate brings an environment of an older version, whose env.json data
// is, to the current one. The manifest is rewritten last, so an
// interrupted migration is redone.
//
// Version 1 to 2: files its sandboxes' other users (uids and gids
// 1-65535) owned were stored at host ids 100001-165535, which the
// idmapped mount of a version 2 layer would show as nobody's; they get
// their sandbox ids back. As another user than root there were no such
// files.
//
// Version 2 to 3: the baseline moves out of env.json into BaselineFile.
// An environment without an origin record was built on this machine
// (pulls and imports have written one since there were any), so it is
// granted the base and limits its manifest names, as before.
func (e *Env) migrate(data []byte) error {
	if e.Version < 2 && os.Getuid() == 0 {
		err := filepath.WalkDir(e.LayerDir(), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return err
			}
			uid, gid := legacyID(st.Uid), legacyID(st.Gid)
			if uid == int(st.Uid) && gid == int(st.Gid) {
				return nil
			}
			return unix.Lchown(p, uid, gid)
		})
		if err != nil {
			return err
		}
	}
	if e.Version < 3 {
		var v2 struct {
			Baseline []TestResult `json:"baseline"`
		}
		if err := json.Unmarshal(data, &v2); err != nil {
			return err
		}
		_, err := os.Stat(filepath.Join(e.dir, BaselineFile))
		if v2.Baseline != nil || errors.Is(err, fs.ErrNotExist) {
			e.Baseline = v2.Baseline
			if err := e.saveBaseline(); err != nil {
				return err
			}
			e.Baseline = nil
		}
		if e.origin == nil {
			o := &Origin{Kind: OriginBuilt, At: e.BuiltAt, Grant: Grant{Base: e.Base, Limits: e.Limits}}
			if err := writeOrigin(e.dir, o); err != nil {
				return err
			}
			e.origin = o
		}
	}
	e.Version = ManifestVersion
	return e.save()
}

// legacyID maps a host id of a version 1 layer to its sandbox id.
func legacyID(id uint32) int {
	if id > 100000 && id <= 165535 {
		return int(id) - 100000
	}
	return int(id)
}
