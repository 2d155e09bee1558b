package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"cwm/internal/egress/indextest"
)

// BenchmarkRelayThroughput downloads a 64 MiB wheel from a loopback index
// directly and through a relay (plain-HTTP forward) served on the host's
// loopback, alternating, and reports both rates and their ratio: what the
// relay costs a download, without the sandbox around it.
//
//	go test -run '^$' -bench RelayThroughput -benchtime 10x ./internal/egress/
func BenchmarkRelayThroughput(b *testing.B) {
	const size = 64 << 20
	ix := indextest.Start(b, indextest.Wheel{Name: "big", Version: "1.0", Pad: size})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var p Policy
	h, _ := ParseAllowHost(ix.Addr)
	p.Allow(h)
	p.MaxBytes = 1 << 40
	r := Serve(context.Background(), ln, p)
	defer r.Close()
	proxy, _ := url.Parse(r.ProxyURL())
	file := "http://" + ix.Addr + "/files/big-1.0-py3-none-any.whl"
	fetch := func(c *http.Client) time.Duration {
		start := time.Now()
		resp, err := c.Get(file)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n < size {
			b.Fatalf("read %d bytes: %v", n, err)
		}
		return time.Since(start)
	}
	direct := &http.Client{Transport: &http.Transport{Proxy: nil}}
	relayed := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
	var td, tr time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		td += fetch(direct)
		tr += fetch(relayed)
	}
	mb := float64(size) / (1 << 20) * float64(b.N)
	b.ReportMetric(mb/td.Seconds(), "direct_MiB/s")
	b.ReportMetric(mb/tr.Seconds(), "relay_MiB/s")
	b.ReportMetric(tr.Seconds()/td.Seconds(), "time_ratio")
}
