package agent

import (
	"testing"

	"cwm/internal/errkind"
)

// A protocol or tool role that does not exist is a usage error, said by
// NewProtocol itself.
func TestNewProtocolUsage(t *testing.T) {
	for _, tc := range [][2]string{{"xml", ""}, {"cwm", "system"}} {
		if _, err := NewProtocol(tc[0], tc[1]); errkind.Of(err) != errkind.Usage {
			t.Errorf("NewProtocol(%q, %q) = %v (kind %v), want a usage error", tc[0], tc[1], err, errkind.Of(err))
		}
	}
}
