package swenative

import (
	"context"
	"net/http"
	"strings"
	"time"

	"cwm/internal/env"
)

// indexProbe asks the package index (PEP 503's simple API) whether it has
// a project, for the conda names of a specification: conda has packages
// the index never had (cdms2, of xarray's environment.yml), and one of
// them in the translated pip line would fail the whole line, where the
// harness's conda installs the rest. Only the index's 404 says no; any
// other answer or failure leaves the name in the line, whose install then
// says what went wrong.
type indexProbe struct {
	url    string
	client *http.Client
	known  map[string]bool
}

func newIndexProbe(indexURL string) *indexProbe {
	return &indexProbe{url: strings.TrimSuffix(indexURL, "/") + "/", client: &http.Client{Timeout: 30 * time.Second}, known: map[string]bool{}}
}

// has reports whether the index may have the project name.
func (p *indexProbe) has(ctx context.Context, name string) bool {
	if p == nil || p.url == "/" {
		return true
	}
	n := env.RequirementName(name)
	if v, ok := p.known[n]; ok {
		return v
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+n+"/", nil)
	if err != nil {
		return true
	}
	res, err := p.client.Do(req)
	if err != nil {
		return true
	}
	res.Body.Close()
	p.known[n] = res.StatusCode != http.StatusNotFound
	return p.known[n]
}
