package errkind

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
)

// kinded is an error type that states its kind with a method, as the
// error types of other packages do.
type kinded struct{}

func (kinded) Error() string { return "kinded" }
func (kinded) Kind() Kind    { return Limit }

func TestOf(t *testing.T) {
	_, missing := os.Open("/no/such/file")
	cases := []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, Internal},
		{"plain", errors.New("x"), Internal},
		{"made", Errorf(Input, "bad line %d", 3), Input},
		{"wrapped", fmt.Errorf("load: %w", New(NotFound, "no env")), NotFound},
		{"wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", Wrap(Usage, errors.New("c")))), Usage},
		{"outermost wins", Wrap(Usage, Wrap(Input, errors.New("x"))), Usage},
		{"method", fmt.Errorf("x: %w", kinded{}), Limit},
		{"joined", errors.Join(errors.New("plain"), New(Unavailable, "down")), Unavailable},
		{"canceled", fmt.Errorf("run: %w", context.Canceled), Canceled},
		{"stated beats canceled", Wrap(Input, context.Canceled), Input},
		{"missing file", missing, NotFound},
		{"missing file wrapped", fmt.Errorf("read: %w", fs.ErrNotExist), NotFound},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("%s: Of(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	base := errors.New("base")
	err := Errorf(Input, "line 2: %w", base)
	if err.Error() != "line 2: base" || !errors.Is(err, base) {
		t.Errorf("Errorf(...) = %q, Is(base) = %v; want the formatted text, wrapping base", err, errors.Is(err, base))
	}
	if Wrap(Input, nil) != nil {
		t.Error("Wrap(Input, nil) != nil")
	}
	if !Is(New(Limit, "x"), Limit) || Is(nil, Internal) {
		t.Error("Is disagrees with Of")
	}
	if Kind(200).String() != "kind(200)" || NotFound.String() != "not found" {
		t.Errorf("String() = %q, %q", Kind(200), NotFound)
	}
}
