package registryguard

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"cwm/internal/errkind"
)

// TestDialRefusesMetadata dials link-local and cloud metadata addresses
// through the guarded dialer: each is refused by the Control hook, which
// runs before connect(2), so no packet leaves; loopback is dialled.
func TestDialRefusesMetadata(t *testing.T) {
	d := &net.Dialer{Timeout: 5 * time.Second, Control: refuseMetadata}
	for _, addr := range []string{"169.254.169.254:80", "169.254.1.1:443", "[fe80::1]:80", "[fd00:ec2::254]:80", "100.100.100.200:80", "[::ffff:169.254.169.254]:80"} {
		start := time.Now()
		_, err := d.DialContext(context.Background(), "tcp", addr)
		if err == nil || !strings.Contains(err.Error(), "a link-local or cloud metadata address is never a registry's") || errkind.Of(err) != errkind.Input {
			t.Errorf("dial %s = %v, want the guard's refusal", addr, err)
		}
		t.Logf("%s refused in %v", addr, time.Since(start))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := d.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dial loopback %s = %v, want it allowed (local registries)", l.Addr(), err)
	}
	c.Close()
}
