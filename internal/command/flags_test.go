package command

import (
	"flag"
	"testing"
)

func TestParseBytes(t *testing.T) {
	cases := map[string]int64{"0": 0, "100": 100, "1K": 1024, "64M": 64 << 20, "2G": 2 << 30, "1.5G": 3 << 29, "512MiB": 512 << 20, "10kb": 10240}
	for in, want := range cases {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1X"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) succeeded", bad)
		}
	}
}

func TestFlagTypes(t *testing.T) {
	var l StringList
	size := ByteSize(1 << 20)
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&l, "l", "")
	fs.Var(&size, "size", "")
	if got := size.String(); got != "1M" {
		t.Errorf("default size prints as %q, want 1M", got)
	}
	if err := fs.Parse([]string{"-l", "a", "-l", "b=c", "-size", "1536"}); err != nil {
		t.Fatal(err)
	}
	if l.String() != "a,b=c" || size != 1536 || size.String() != "1536" {
		t.Errorf("parsed -l %q -size %d (%s); want a,b=c and 1536", l.String(), size, size.String())
	}
	if err := fs.Parse([]string{"-size", "lots"}); err == nil {
		t.Error("-size lots parsed")
	}
}
