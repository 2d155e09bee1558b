package env

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"cwm/internal/errkind"
)

// splitLegacy reads a manifest past MaxManifest, which only a version 2
// one (its baseline inline) may be: the baseline is streamed, test by
// test, into BaselineFile, and what is left, which must fit MaxManifest,
// is returned for load to migrate. Memory stays bounded whatever the file
// holds: the reader refuses to give more than MaxManifest (and the
// decoder's read-ahead) beyond what the baseline's tests took, so a large
// value elsewhere is refused as it is read.
func splitLegacy(dir string, big *tooBigError) ([]byte, error) {
	f, err := os.Open(big.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := &budgetReader{r: bufio.NewReader(f), budget: MaxManifest + 4<<20}
	dec := json.NewDecoder(br)
	refuse := func(err error) ([]byte, error) {
		if br.over {
			return nil, errkind.Wrap(errkind.Input, big)
		}
		return nil, errkind.Errorf(errkind.Input, "read %s: %v", big.path, err)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return refuse(fmt.Errorf("not a JSON object"))
	}
	rest := map[string]json.RawMessage{}
	var tmp string
	defer func() {
		if tmp != "" {
			os.Remove(tmp)
		}
	}()
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return refuse(err)
		}
		key, _ := t.(string)
		if key != "baseline" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return refuse(err)
			}
			rest[key] = raw
			continue
		}
		if tmp != "" {
			os.Remove(tmp) // a second baseline: the last one counts, as for json.Unmarshal
		}
		if tmp, err = streamBaseline(dec, br, dir); err != nil {
			return refuse(err)
		}
	}
	var v struct {
		Version int `json:"version"`
	}
	if raw, ok := rest["version"]; ok {
		json.Unmarshal(raw, &v.Version)
	}
	if v.Version >= 3 || tmp == "" {
		return nil, errkind.Wrap(errkind.Input, big)
	}
	data, err := json.Marshal(rest)
	if err != nil {
		return nil, err
	}
	if len(data) > MaxManifest {
		return nil, errkind.Wrap(errkind.Input, big)
	}
	os.Chmod(tmp, 0o644)
	if err := os.Rename(tmp, filepath.Join(dir, BaselineFile)); err != nil {
		return nil, err
	}
	tmp = ""
	return data, nil
}

// streamBaseline copies the baseline array dec is at into a temporary
// file of dir, one test at a time, and returns the file's name.
func streamBaseline(dec *json.Decoder, br *budgetReader, dir string) (string, error) {
	f, err := os.CreateTemp(dir, ".baseline-")
	if err != nil {
		return "", err
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", err
	}
	w := bufio.NewWriter(f)
	t, err := dec.Token()
	if err != nil {
		return fail(err)
	}
	w.WriteString("[")
	if t == json.Delim('[') {
		for first := true; dec.More(); first = false {
			start := dec.InputOffset()
			var tr TestResult
			if err := dec.Decode(&tr); err != nil {
				return fail(err)
			}
			br.budget += dec.InputOffset() - start
			b, _ := json.Marshal(tr)
			if !first {
				w.WriteString(",")
			}
			w.Write(b)
		}
		if _, err := dec.Token(); err != nil {
			return fail(err)
		}
	} else if t != nil {
		return fail(fmt.Errorf("baseline is not a list"))
	}
	w.WriteString("]\n")
	if err := w.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return name, nil
}

// budgetReader fails once more than budget bytes were read.
type budgetReader struct {
	r      io.Reader
	n      int64
	budget int64
	over   bool
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.n > b.budget {
		b.over = true
		return 0, fmt.Errorf("past the read budget")
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}
