package model

import (
	"testing"

	"cwm/internal/errkind"
)

// A client without an endpoint or a model is a usage error, said by
// NewClient itself.
func TestNewClientUsage(t *testing.T) {
	for _, cfg := range []ClientConfig{{Model: "m"}, {BaseURL: "http://127.0.0.1:1/v1"}} {
		if _, err := NewClient(cfg); errkind.Of(err) != errkind.Usage {
			t.Errorf("NewClient(%+v) = %v (kind %v), want a usage error", cfg, err, errkind.Of(err))
		}
	}
}
