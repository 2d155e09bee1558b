package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strings"
)

// Bar is one bar of a chart: a label, a value, and optionally the
// half-width of its confidence interval.
type Bar struct {
	Label string
	Value float64
	CI    float64
	// Text is printed above the bar (the value, formatted).
	Text string
}

// barChart draws bars as an inline SVG: one <rect class="mark"> per bar
// and one <line class="ci"> per interval, scaled to top (1 for rates).
func barChart(name string, bars []Bar, top float64) template.HTML {
	const w, h, left, bottom, pad = 640.0, 250.0, 40.0, 40.0, 20.0
	if top <= 0 {
		top = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" data-chart="%s" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s">`,
		html.EscapeString(name), w, h, w, h, html.EscapeString(name))
	fmt.Fprintf(&b, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g"/>`, left, h-bottom, w-pad, h-bottom)
	fmt.Fprintf(&b, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g"/>`, left, pad, left, h-bottom)
	fmt.Fprintf(&b, `<text class="tick" x="%g" y="%g" text-anchor="end">%s</text>`, left-4, pad+4, html.EscapeString(tickText(top)))
	fmt.Fprintf(&b, `<text class="tick" x="%g" y="%g" text-anchor="end">0</text>`, left-4, h-bottom)
	n := float64(max(len(bars), 1))
	slot := (w - left - pad) / n
	y := func(v float64) float64 { return h - bottom - (h-bottom-pad)*min(max(v/top, 0), 1) }
	for i, bar := range bars {
		x := left + float64(i)*slot + slot*0.15
		bw := slot * 0.7
		fmt.Fprintf(&b, `<rect class="mark" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %s</title></rect>`,
			x, y(bar.Value), bw, h-bottom-y(bar.Value), html.EscapeString(bar.Label), html.EscapeString(bar.Text))
		if bar.CI > 0 {
			cx := x + bw/2
			fmt.Fprintf(&b, `<line class="ci" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, cx, y(bar.Value+bar.CI), cx, y(bar.Value-bar.CI))
		}
		fmt.Fprintf(&b, `<text class="value" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x+bw/2, max(y(bar.Value+bar.CI)-4, 12), html.EscapeString(bar.Text))
		fmt.Fprintf(&b, `<text class="label" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, x+bw/2, h-bottom+16, html.EscapeString(bar.Label))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func tickText(top float64) string {
	if top == 1 {
		return "100%"
	}
	return fmt.Sprintf("%g", top)
}

// heatmap draws a matrix of counts, one <rect class="mark"> per cell.
func heatmap(name string, rows, cols []string, cells [][]int) template.HTML {
	const cw, ch, left, topm = 120.0, 40.0, 110.0, 30.0
	w, h := left+cw*float64(len(cols))+10, topm+ch*float64(len(rows))+10
	maxv := 1
	for _, r := range cells {
		for _, v := range r {
			maxv = max(maxv, v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" data-chart="%s" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s">`,
		html.EscapeString(name), w, h, w, h, html.EscapeString(name))
	for j, c := range cols {
		fmt.Fprintf(&b, `<text class="label" x="%g" y="%g" text-anchor="middle">%s</text>`, left+cw*float64(j)+cw/2, topm-10, html.EscapeString(c))
	}
	for i, r := range rows {
		fmt.Fprintf(&b, `<text class="label" x="%g" y="%g" text-anchor="end">%s</text>`, left-8, topm+ch*float64(i)+ch/2+4, html.EscapeString(r))
		for j := range cols {
			v := cells[i][j]
			fmt.Fprintf(&b, `<rect class="mark" x="%g" y="%g" width="%g" height="%g" fill-opacity="%.2f"><title>%s / %s: %d</title></rect>`,
				left+cw*float64(j), topm+ch*float64(i), cw-2, ch-2, 0.1+0.8*float64(v)/float64(maxv),
				html.EscapeString(r), html.EscapeString(cols[j]), v)
			fmt.Fprintf(&b, `<text class="value" x="%g" y="%g" text-anchor="middle">%d</text>`, left+cw*float64(j)+cw/2, topm+ch*float64(i)+ch/2+4, v)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// histogram bins values into n equal bins between their minimum and
// maximum (one bin per value when there are at most n distinct values).
func histogram(values []float64, n int) []Bar {
	if len(values) == 0 {
		return nil
	}
	distinct := map[float64]int{}
	lo, hi := values[0], values[0]
	for _, v := range values {
		distinct[v]++
		lo, hi = min(lo, v), max(hi, v)
	}
	if len(distinct) <= n {
		keys := make([]float64, 0, len(distinct))
		for k := range distinct {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		bars := make([]Bar, len(keys))
		for i, k := range keys {
			bars[i] = Bar{Label: fmt.Sprintf("%g", k), Value: float64(distinct[k]), Text: fmt.Sprint(distinct[k])}
		}
		return bars
	}
	counts := make([]int, n)
	for _, v := range values {
		i := int(float64(n) * (v - lo) / (hi - lo))
		counts[min(i, n-1)]++
	}
	bars := make([]Bar, n)
	for i, c := range counts {
		from := lo + (hi-lo)*float64(i)/float64(n)
		bars[i] = Bar{Label: fmt.Sprintf("%.3g", from), Value: float64(c), Text: fmt.Sprint(c)}
	}
	return bars
}

func maxValue(bars []Bar) float64 {
	m := 0.0
	for _, b := range bars {
		m = max(m, b.Value)
	}
	return m
}

// XY is one point of a line chart.
type XY struct{ X, Y float64 }

// Series is one line of a line chart.
type Series struct {
	Name   string
	Points []XY
}

// log2LineChart draws rates (0 to 1) over x values spaced by log2 (k = 1,
// 2, 4, ...) as an inline SVG: one <polyline class="series sI"> and one
// <circle class="mark sI"> per point for series I, a tick per distinct x,
// and a legend.
func log2LineChart(name string, series []Series) template.HTML {
	const w, h, left, bottom, pad, legend = 640.0, 280.0, 48.0, 40.0, 20.0, 120.0
	var xs []float64
	for _, s := range series {
		for _, p := range s.Points {
			if !slices.Contains(xs, p.X) {
				xs = append(xs, p.X)
			}
		}
	}
	slices.Sort(xs)
	lo, hi := 0.0, 1.0
	if len(xs) > 0 {
		lo, hi = math.Log2(max(xs[0], 1)), math.Log2(max(xs[len(xs)-1], 1))
	}
	x := func(v float64) float64 {
		if hi == lo {
			return left + (w-legend-left)/2
		}
		return left + 10 + (w-legend-left-20)*(math.Log2(max(v, 1))-lo)/(hi-lo)
	}
	y := func(v float64) float64 { return h - bottom - (h-bottom-pad)*min(max(v, 0), 1) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" data-chart="%s" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="%s">`,
		html.EscapeString(name), w, h, w, h, html.EscapeString(name))
	fmt.Fprintf(&b, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g"/>`, left, h-bottom, w-legend, h-bottom)
	fmt.Fprintf(&b, `<line class="axis" x1="%g" y1="%g" x2="%g" y2="%g"/>`, left, pad, left, h-bottom)
	for _, t := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text class="tick" x="%g" y="%.1f" text-anchor="end">%g%%</text>`, left-4, y(t)+4, 100*t)
		if t > 0 {
			fmt.Fprintf(&b, `<line class="grid" x1="%g" y1="%.1f" x2="%g" y2="%.1f"/>`, left, y(t), w-legend, y(t))
		}
	}
	for _, v := range xs {
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%g" text-anchor="middle">%g</text>`, x(v), h-bottom+16, v)
	}
	fmt.Fprintf(&b, `<text class="label" x="%g" y="%g" text-anchor="middle">k (log2 scale)</text>`, left+(w-legend-left)/2, h-6)
	fmt.Fprintf(&b, `<text class="label" x="12" y="%g" text-anchor="middle" transform="rotate(-90 12 %g)">resolved</text>`, pad+(h-bottom-pad)/2, pad+(h-bottom-pad)/2)
	for i, s := range series {
		pts := make([]string, len(s.Points))
		for j, p := range s.Points {
			pts[j] = fmt.Sprintf("%.1f,%.1f", x(p.X), y(p.Y))
		}
		fmt.Fprintf(&b, `<polyline class="series s%d" points="%s"/>`, i, strings.Join(pts, " "))
		for _, p := range s.Points {
			fmt.Fprintf(&b, `<circle class="mark s%d" cx="%.1f" cy="%.1f" r="3.5"><title>%s, k = %g: %.1f%%</title></circle>`,
				i, x(p.X), y(p.Y), html.EscapeString(s.Name), p.X, 100*p.Y)
		}
		ly := pad + 18*float64(i)
		fmt.Fprintf(&b, `<line class="series s%d" x1="%g" y1="%g" x2="%g" y2="%g"/>`, i, w-legend+12, ly, w-legend+32, ly)
		fmt.Fprintf(&b, `<text class="legend" x="%g" y="%g">%s</text>`, w-legend+38, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
