// Package errkind sorts cwm's errors into the few kinds a caller reacts
// to differently: a wrong call, unusable input, something named that does
// not exist, a limit reached, a service that failed, an interrupted run,
// and everything else, which is cwm's own failure.
//
// A kind is attached where an error is made, by the package that knows
// what went wrong (errkind.Errorf, or a Kind method on an error type), and
// read where it is reported, by the one place that maps kinds to what the
// outside world sees: cwm/internal/command maps them to exit statuses, and
// a server maps them to HTTP statuses. Wrapping keeps the kind: Of looks
// through the whole chain.
//
// The package imports only errors, context, fmt and io/fs, so that the
// command-line framework (and the sandbox fast path built on it) stays
// light.
package errkind

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Kind is what sort of failure an error is. The zero Kind is Internal.
type Kind uint8

const (
	// Internal is a failure of cwm or of the machine it runs on: a bug,
	// a sandbox that died, a disk that filled. The command line exits 1;
	// a server answers 500.
	Internal Kind = iota
	// Usage is a wrong call: a missing, unknown or invalid flag, argument
	// or option. The command line prints the command's help and exits 2;
	// a server answers 400.
	Usage
	// Input is input that cannot be used as given: a malformed or
	// truncated file, a task whose patches do not apply, a repository
	// that is not one, an environment that is not usable. The command
	// line exits 1; a server answers 422.
	Input
	// NotFound is something named that does not exist: an environment,
	// a file, a revision. The command line exits 1; a server answers 404.
	NotFound
	// Limit is work stopped by a limit it was given: a diff or a file too
	// large to keep, a budget spent. The command line exits 1; a server
	// answers 413.
	Limit
	// Unavailable is a service cwm depends on that kept failing: the
	// model server after its retries. Running again later may succeed.
	// The command line exits 1; a server answers 502.
	Unavailable
	// Canceled is a run interrupted by its caller (a signal, a closed
	// connection, a cancelled context). The command line exits 1; a
	// server that still can answers 499.
	Canceled
)

var names = [...]string{Internal: "internal", Usage: "usage", Input: "input", NotFound: "not found",
	Limit: "limit", Unavailable: "unavailable", Canceled: "canceled"}

func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Error is an error of a kind. Its text is the wrapped error's.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New returns an error of kind k with the text msg.
func New(k Kind, msg string) error { return &Error{Kind: k, Err: errors.New(msg)} }

// Errorf formats an error of kind k as fmt.Errorf does (%w wraps).
func Errorf(k Kind, format string, args ...any) error {
	return &Error{Kind: k, Err: fmt.Errorf(format, args...)}
}

// Wrap gives err the kind k; a nil err stays nil.
func Wrap(k Kind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: k, Err: err}
}

// Of returns the kind of err: that of the first error in its chain that
// has one (an *Error, or an error type with a Kind() Kind method);
// otherwise Canceled for a cancelled context and NotFound for a missing
// file; otherwise Internal. Of(nil) is Internal.
func Of(err error) Kind {
	if k, ok := stated(err); ok {
		return k
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, fs.ErrNotExist):
		return NotFound
	}
	return Internal
}

// stated returns the kind the first error in err's tree states, in the
// order errors.As visits them.
func stated(err error) (Kind, bool) {
	for err != nil {
		switch x := err.(type) {
		case *Error:
			return x.Kind, true
		case interface{ Kind() Kind }:
			return x.Kind(), true
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				if k, ok := stated(e); ok {
					return k, true
				}
			}
			return 0, false
		}
		err = errors.Unwrap(err)
	}
	return 0, false
}

// Is reports whether err is of kind k.
func Is(err error, k Kind) bool { return err != nil && Of(err) == k }
