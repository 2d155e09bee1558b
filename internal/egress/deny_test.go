package egress

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/egress/indextest"
)

// ask sends one raw request to the relay from inside the sandbox (bash's
// /dev/tcp, no client library in between) and returns the status line.
func ask(t *testing.T, s sb, r *Relay, request string) string {
	t.Helper()
	port := strings.TrimPrefix(r.ProxyURL(), "http://127.0.0.1:")
	res := s.run(t, r, fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%s && printf '%%b' %q >&3 && head -n 1 <&3 | tr -d '\\r'", port, request))
	return strings.TrimSpace(string(res.Stdout))
}

// TestRelayRefuses checks each refusal from inside a sandbox, as the
// status line a client gets, and in the relay's Stats.
func TestRelayRefuses(t *testing.T) {
	s := sb{newSandbox(t)}
	p := Policy{
		Hosts: []Host{{Name: "localhost"}, {Name: "rebind.test"}, {Name: "ok.test"}, {Name: "*.suffix.test"}},
		// rebind.test resolves to a metadata address; ok.test and names
		// under suffix.test to loopback.
		Resolve: func(_ context.Context, host string) ([]netip.Addr, error) {
			if host == "rebind.test" {
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
	}
	r, err := Start(context.Background(), s.Sandbox, p)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, request string
		want          Refusal
	}{
		{"not on the list", "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n", Refusal{"evil.example", 443, "not on the allowlist"}},
		{"suffix is not the domain", "CONNECT suffix.test:443 HTTP/1.1\r\n\r\n", Refusal{"suffix.test", 443, "not on the allowlist"}},
		{"forward not on the list", "GET http://evil.example/x HTTP/1.1\r\nHost: evil.example\r\n\r\n", Refusal{"evil.example", 80, "not on the allowlist"}},
		{"allowed name resolving to loopback", "CONNECT localhost:443 HTTP/1.1\r\n\r\n", Refusal{"localhost", 443, "resolves to 127.0.0.1, a loopback address"}},
		{"allowed suffix resolving to loopback", "CONNECT a.suffix.test:443 HTTP/1.1\r\n\r\n", Refusal{"a.suffix.test", 443, "resolves to 127.0.0.1, a loopback address"}},
		{"allowed name resolving to metadata", "CONNECT rebind.test:443 HTTP/1.1\r\n\r\n", Refusal{"rebind.test", 443, "resolves to 169.254.169.254, a link-local or cloud metadata address"}},
		{"port 22", "CONNECT ok.test:22 HTTP/1.1\r\n\r\n", Refusal{"ok.test", 22, "port 22 is not allowed for this host"}},
		{"port 8080", "CONNECT ok.test:8080 HTTP/1.1\r\n\r\n", Refusal{"ok.test", 8080, "port 8080 is not allowed for this host"}},
		{"port 80 of a host not marked apt", "GET http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\n\r\n", Refusal{"ok.test", 80, "port 80 is not allowed for this host"}},
		{"metadata address", "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n", Refusal{"169.254.169.254", 80, "a link-local or cloud metadata address"}},
		{"metadata address, another cloud", "CONNECT 100.100.100.200:443 HTTP/1.1\r\n\r\n", Refusal{"100.100.100.200", 443, "a link-local or cloud metadata address"}},
		{"literal link-local", "CONNECT 169.254.1.1:443 HTTP/1.1\r\n\r\n", Refusal{"169.254.1.1", 443, "a link-local or cloud metadata address"}},
		{"literal IPv6 link-local", "CONNECT [fe80::1]:443 HTTP/1.1\r\n\r\n", Refusal{"fe80::1", 443, "a link-local or cloud metadata address"}},
		{"literal loopback not given", "CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", Refusal{"127.0.0.1", 443, "a loopback address"}},
	}
	var want []Refusal
	for _, c := range cases {
		want = append(want, c.want)
		got := ask(t, s, r, c.request)
		wantLine := "HTTP/1.1 403 " + refusedMsg(c.want.Host, c.want.Port, c.want.Why)
		if got != wantLine {
			t.Errorf("%s: the sandbox got %q, want %q", c.name, got, wantLine)
		}
	}
	st := r.Close()
	if diff := cmp.Diff(want, st.Refusals); diff != "" {
		t.Errorf("Stats.Refusals (-want +got):\n%s", diff)
	}
	if st.Conns != 0 || st.Bytes != 0 {
		t.Errorf("Stats = %d connections, %d bytes; want nothing relayed", st.Conns, st.Bytes)
	}
}

// TestByteCap cuts a download that passes the step's byte cap: pip fails
// in the sandbox, and the refusal names the cap.
func TestByteCap(t *testing.T) {
	ix := indextest.Start(t, indextest.Wheel{Name: "big", Version: "1.0", Pad: 4 << 20})
	s := sb{newSandbox(t)}
	p := allowIndex(t, ix.Addr)
	p.MaxBytes = 1 << 20
	r, err := Start(context.Background(), s.Sandbox, p)
	if err != nil {
		t.Fatal(err)
	}
	res := s.run(t, r, "python3 -m pip download --no-cache-dir --retries 0 -d /tmp/d --index-url "+ix.URL+" big")
	st := r.Close()
	if res.ExitCode == 0 {
		t.Errorf("pip download of a 4 MiB wheel under a 1 MiB cap succeeded:\n%s", output(res))
	}
	wantWhy := "the step's byte cap of 1048576 bytes was reached"
	if len(st.Refusals) != 1 || st.Refusals[0].Why != wantWhy || st.Refusals[0].Host != "127.0.0.1" {
		t.Errorf("Stats.Refusals = %v, want one: %q", st.Refusals, wantWhy)
	}
	if st.Bytes < 1<<20 || st.Bytes > 2<<20 {
		t.Errorf("Stats.Bytes = %d, want the cap and at most a buffer more", st.Bytes)
	}
}

// TestTimeCap cuts a request a server never answers when the step's time
// cap passes, and refuses the next one.
func TestTimeCap(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		<-release
	}))
	s := sb{newSandbox(t)}
	p := allowIndex(t, addr)
	p.MaxTime = 2 * time.Second
	r, err := Start(context.Background(), s.Sandbox, p)
	if err != nil {
		t.Fatal(err)
	}
	port := strings.TrimPrefix(r.ProxyURL(), "http://127.0.0.1:")
	// The read ends only when the relay cuts the connection.
	res := s.run(t, r, fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%s && printf 'GET http://%s/ HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' >&3 && cat <&3 >/dev/null; echo cut", port, addr, addr))
	if strings.TrimSpace(string(res.Stdout)) != "cut" {
		t.Fatalf("the hanging request: %s", output(res))
	}
	wantWhy := "the step's time cap of 2s was reached"
	got := ask(t, s, r, "GET http://"+addr+"/ HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if want := "HTTP/1.1 403 " + refusedMsg("127.0.0.1", atoi(strings.Split(addr, ":")[1]), wantWhy); got != want {
		t.Errorf("a request after the time cap got %q, want %q", got, want)
	}
	st := r.Close()
	if len(st.Refusals) != 2 || st.Refusals[0].Why != wantWhy || st.Refusals[1].Why != wantWhy || st.Conns != 1 {
		t.Errorf("Stats = %+v, want the cut request and the later one refused for the time cap", st)
	}
}
