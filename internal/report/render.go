package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cwm/internal/eval"
)

//go:embed page.html
var pageHTML string

//go:embed viewer.js
var viewerJS string

// page is the report's template, parsed on first use (not in every cwm
// process's start-up).
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"pct":  func(x float64) string { return strconv.FormatFloat(100*x, 'f', 1, 64) + "%" },
		"f1":   func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) },
		"ci95": func(se float64) string { return "± " + strconv.FormatFloat(196*se, 'f', 1, 64) },
		"passk": func(m map[string]float64) string {
			ks := make([]int, 0, len(m))
			for k := range m {
				n, _ := strconv.Atoi(k)
				ks = append(ks, n)
			}
			slices.Sort(ks)
			var parts []string
			for _, k := range ks {
				if k > 1 {
					parts = append(parts, fmt.Sprintf("pass@%d %.1f%%", k, 100*m[strconv.Itoa(k)]))
				}
			}
			return strings.Join(parts, ", ")
		},
		"counts": func(m map[string]int) string {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
			}
			return strings.Join(parts, ", ")
		},
		"kinds": func() []string { return eval.ValueKinds },
		"pctp": func(p *float64) string {
			if p == nil {
				return "-"
			}
			return strconv.FormatFloat(100**p, 'f', 1, 64) + "%"
		},
		"rate": func(c eval.Counts) string { return strconv.FormatFloat(100*c.Rate(), 'f', 1, 64) + "%" },
	}).Parse(pageHTML))
})

// Render writes the page.
func Render(w io.Writer, r *Report) error {
	data, err := json.Marshal(r.Viewer)
	if err != nil {
		return err
	}
	// Inside <script>, "</" must not close the element.
	js := strings.ReplaceAll(string(data), "</", `<\/`)
	return page().Execute(w, struct {
		*Report
		Charts   map[string]template.HTML
		Data     template.JS
		ViewerJS template.JS
	}{r, r.charts(), template.JS(js), template.JS(viewerJS)})
}

// charts draws every plot of the page, by name (the name is the SVG's
// data-chart attribute).
func (r *Report) charts() map[string]template.HTML {
	c := map[string]template.HTML{}
	if len(r.Crux) > 0 {
		var bars []Bar
		for _, s := range r.Crux {
			p := s.Summary.PassAt["1"]
			bars = append(bars, Bar{Label: string(s.Summary.Mode), Value: p, CI: 1.96 * s.Summary.PassAt1StdErr,
				Text: strconv.FormatFloat(100*p, 'f', 1, 64) + "%"})
		}
		c["cruxeval-pass1"] = barChart("cruxeval-pass1", bars, 1)
	}
	for i, s := range r.Halt {
		cf := s.Summary.Confusion
		cells := [][]int{
			{cf[eval.Terminates][eval.Terminates], cf[eval.Terminates][eval.Diverges], cf[eval.Terminates][""]},
			{cf[eval.Diverges][eval.Terminates], cf[eval.Diverges][eval.Diverges], cf[eval.Diverges][""]},
		}
		c[fmt.Sprintf("halt-confusion-%d", i)] = heatmap(fmt.Sprintf("halt-confusion-%d", i),
			[]string{"terminates", "diverges"}, []string{"terminates", "diverges", "no answer"}, cells)
	}
	for i, s := range r.Fid {
		if s.Summary.Traces == 0 {
			continue
		}
		var dec []Bar
		for d, cnt := range s.Summary.ByDecile {
			dec = append(dec, Bar{Label: fmt.Sprintf("%d%%", 10*d), Value: cnt.Rate(), Text: strconv.FormatFloat(100*cnt.Rate(), 'f', 0, 64) + "%"})
		}
		c[fmt.Sprintf("fidelity-decile-%d", i)] = barChart(fmt.Sprintf("fidelity-decile-%d", i), dec, 1)
		var kinds []Bar
		for _, k := range eval.ValueKinds {
			if cnt, ok := s.Summary.ByKind[k]; ok {
				kinds = append(kinds, Bar{Label: k, Value: cnt.Rate(), Text: strconv.FormatFloat(100*cnt.Rate(), 'f', 0, 64) + "%"})
			}
		}
		c[fmt.Sprintf("fidelity-kind-%d", i)] = barChart(fmt.Sprintf("fidelity-kind-%d", i), kinds, 1)
	}
	for i, s := range r.Obs {
		var bars []Bar
		for _, t := range s.Tools {
			st := s.Summary.Tools[t]
			bars = append(bars, Bar{Label: t, Value: st.Similarity, Text: strconv.FormatFloat(st.Similarity, 'f', 2, 64)})
		}
		c[fmt.Sprintf("observe-tools-%d", i)] = barChart(fmt.Sprintf("observe-tools-%d", i), bars, 1)
	}
	for i, s := range r.Traj {
		if len(s.Rewards) > 0 {
			h := histogram(s.Rewards, 10)
			c[fmt.Sprintf("rewards-%d", i)] = barChart(fmt.Sprintf("rewards-%d", i), h, maxValue(h))
		}
		h := histogram(s.Turns, 10)
		c[fmt.Sprintf("turns-%d", i)] = barChart(fmt.Sprintf("turns-%d", i), h, maxValue(h))
	}
	for i, s := range r.Select {
		if len(s.Curve) > 0 {
			c[fmt.Sprintf("select-curve-%d", i)] = log2LineChart(fmt.Sprintf("select-curve-%d", i), selectSeries(s))
		}
	}
	return c
}
