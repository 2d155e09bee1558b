package export

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// inEval reports whether a repository's rows go to eval: the repository's
// coin under the seed, read as a fraction of 2^64, below share. Every
// record of a repository lands on the same side, whatever the order or the
// number of input files, so no repository is in both files; the share is
// of repositories, not of rows.
func inEval(seed uint64, repo string, share float64) bool {
	return float64(coin(seed, repo)) < share*math.Exp2(64)
}

// coin is 64 evenly spread bits decided by the seed and the parts (each
// followed by a zero byte): the first eight bytes of their SHA-256, whose
// bits are all well mixed, which both the split's fraction and the
// masking's bit read (FNV-1a's are not, between inputs that differ only in
// their last bytes: "repo-1", "repo-2").
func coin(seed uint64, parts ...string) uint64 {
	h := sha256.New()
	h.Write(binary.LittleEndian.AppendUint64(nil, seed))
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return binary.BigEndian.Uint64(h.Sum(nil))
}
