package envserver

import (
	"errors"
	"fmt"
	"net/http"

	"cwm/internal/errkind"
)

// capacityError is a new episode refused because MaxSessions are open,
// or because the machine is out of room for its tasks (machine says
// which limit, taskRoom): OpenEnv's CAPACITY_REACHED, HTTP 503 with
// Retry-After.
type capacityError struct {
	active, max int
	machine     string
}

func (e *capacityError) Error() string {
	if e.machine != "" {
		return fmt.Sprintf("Server at capacity: %d/%d sessions active, and %s. Cannot accept new connections.", e.active, e.max, e.machine)
	}
	return fmt.Sprintf("Server at capacity: %d/%d sessions active. Cannot accept new connections.", e.active, e.max)
}

// sessionError is a request that does not fit the state of the server or
// of an episode: the server is draining, the episode is busy with another
// step, owned by another connection, or gone.
type sessionError struct {
	status int
	msg    string
}

func (e *sessionError) Error() string { return e.msg }

var errDraining = &sessionError{http.StatusServiceUnavailable, "the server is shutting down: no new episodes or steps"}

func errBusy(id string) error {
	return &sessionError{http.StatusConflict, fmt.Sprintf("episode %s is running a step: send one step at a time", id)}
}

func errNoEpisode(id string) error {
	return &sessionError{http.StatusNotFound, fmt.Sprintf("no episode %s: it was closed, reaped after its idle timeout, or never started", id)}
}

// factoryError is an episode that could not be started from a valid
// reset: its sandbox would not start, its task's bug patch does not
// apply. OpenEnv's FACTORY_ERROR; the HTTP status is the cause's.
type factoryError struct{ err error }

func (e *factoryError) Error() string { return e.err.Error() }
func (e *factoryError) Unwrap() error { return e.err }

// classify is the one place where an error becomes what a client sees:
// an HTTP status and an OpenEnv error code. Kinds map as errkind's
// documentation says (usage 400, input 422, not found 404, limit 413,
// unavailable 502, canceled 499, internal 500).
func classify(err error) (status int, code string) {
	var ve *validationError
	var ce *capacityError
	var se *sessionError
	var fe *factoryError
	var le *checkpointLimitError
	switch {
	case errors.As(err, &le):
		return http.StatusRequestEntityTooLarge, CodeCheckpointLimit
	case errors.As(err, &ve):
		return http.StatusUnprocessableEntity, CodeValidationError
	case errors.As(err, &ce):
		return http.StatusServiceUnavailable, CodeCapacityReached
	case errors.As(err, &se):
		return se.status, CodeSessionError
	case errors.As(err, &fe):
		status, _ := classify(fe.err)
		return status, CodeFactoryError
	}
	switch errkind.Of(err) {
	case errkind.Usage:
		return http.StatusBadRequest, CodeValidationError
	case errkind.Input:
		return http.StatusUnprocessableEntity, CodeValidationError
	case errkind.NotFound:
		return http.StatusNotFound, CodeValidationError
	case errkind.Limit:
		return http.StatusRequestEntityTooLarge, CodeExecutionError
	case errkind.Unavailable:
		return http.StatusBadGateway, CodeExecutionError
	case errkind.Canceled:
		return 499, CodeSessionError
	}
	return http.StatusInternalServerError, CodeExecutionError
}
