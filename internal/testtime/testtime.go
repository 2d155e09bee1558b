// Package testtime scales the wall-clock bounds that tests assert (a
// sandbox stops a fork bomb within 10 s, a build takes under a minute) on
// machines that are slower than the ones the bounds were set on: a virtual
// machine under software emulation runs 10 to 30 times slower, and the
// bound there says nothing about cwm. CWM_TEST_TIME_SCALE (a number, 1 by
// default) multiplies every such bound; the limits under test (a command's
// timeout, its CPU time) stay as they are, since those are what is tested.
package testtime

import (
	"os"
	"strconv"
	"time"
)

// Env is the variable that holds the scale.
const Env = "CWM_TEST_TIME_SCALE"

// Scale returns d times the scale in $CWM_TEST_TIME_SCALE; d itself when
// the variable is unset or not a number of at least 1.
func Scale(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv(Env), 64)
	if err != nil || f < 1 {
		return d
	}
	return time.Duration(float64(d) * f)
}
