// Package layertartest writes the tars an attacker would and
// archive/tar will not: sparse entries that declare far more than they
// hold, in the old GNU form and the PAX (GNU 1.0) one.
package layertartest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"strings"
)

// RawEntry is one entry's blocks (no end marker) with the type flag
// flag, whatever archive/tar would write; edit changes the header before
// its checksum is computed.
func RawEntry(name string, flag byte, body []byte, edit func(h []byte)) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(body)), Mode: 0o644, Format: tar.FormatGNU}); err != nil {
		panic(err) // a name too long for the GNU format: the test's own mistake
	}
	tw.Write(body)
	tw.Flush()
	raw := b.Bytes()
	h := raw[:512]
	h[156] = flag
	if edit != nil {
		edit(h)
	}
	copy(h[148:156], "        ")
	sum := 0
	for _, c := range h {
		sum += int(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return raw
}

// endMarker ends a tar.
var endMarker = make([]byte, 1024)

// GNUSparse is a tar of one old-style GNU sparse entry ('S') that
// declares realSize bytes and stores 512.
func GNUSparse(name string, realSize int64) []byte {
	raw := RawEntry(name, tar.TypeGNUSparse, make([]byte, 512), func(h []byte) {
		copy(h[386:398], fmt.Sprintf("%011o\x00", 0))   // the one data region: offset 0,
		copy(h[398:410], fmt.Sprintf("%011o\x00", 512)) // 512 bytes
		copy(h[483:495], fmt.Sprintf("%011o\x00", realSize))
	})
	return append(raw, endMarker...)
}

// PAXSparse is a tar of one PAX (GNU 1.0) sparse entry declaring
// realSize bytes and storing 512 (archive/tar drops GNU.sparse records
// it is given: they are written here).
func PAXSparse(name string, realSize int64) []byte {
	var recs string
	for _, kv := range [][2]string{{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"}, {"GNU.sparse.name", name}, {"GNU.sparse.realsize", fmt.Sprint(realSize)}} {
		rec := " " + kv[0] + "=" + kv[1] + "\n"
		n := len(rec) + 2
		if len(fmt.Sprint(n)) > 2 {
			n++
		}
		recs += fmt.Sprint(n) + rec
	}
	sparseMap := "1\n0\n512\n"
	body := sparseMap + strings.Repeat("\x00", 512-len(sparseMap)) + strings.Repeat("x", 512)
	raw := RawEntry("PaxHeaders/"+name, tar.TypeXHeader, []byte(recs), nil)
	raw = append(raw, RawEntry(name, tar.TypeReg, []byte(body), nil)...)
	return append(raw, endMarker...)
}
