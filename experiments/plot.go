package experiments

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The plots of a report: small helpers over gonum.org/v1/plot that render
// to PNG bytes, so that the report writes every file the same way.

// series is one line of a line plot.
type series struct {
	name   string
	xs, ys []float64
	// style picks color, glyph and dashes (plotutil's palettes).
	style int
	// dashed draws a reference line (ideal, the paper) without glyphs.
	dashed bool
}

const dpi = 120

// newPlot returns a plot with a title, axis labels and a grid.
func newPlot(title, x, y string, small bool) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	if small {
		p.Title.TextStyle.Font.Size = vg.Points(9)
		for _, a := range []*plot.Axis{&p.X, &p.Y} {
			a.Label.TextStyle.Font.Size = vg.Points(8)
			a.Tick.Label.Font.Size = vg.Points(7)
		}
		p.Legend.TextStyle.Font.Size = vg.Points(7)
	}
	p.Add(plotter.NewGrid())
	return p
}

// addSeries draws lines with glyphs (or dashed reference lines) and their
// legend entries.
func addSeries(p *plot.Plot, ss []series) error {
	for _, s := range ss {
		if len(s.xs) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.xs))
		for i := range s.xs {
			xys[i].X, xys[i].Y = s.xs[i], s.ys[i]
		}
		if s.dashed {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return err
			}
			l.Color = color.Gray{Y: 110}
			l.Dashes = plotutil.Dashes(1 + s.style%3)
			p.Add(l)
			p.Legend.Add(s.name, l)
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		l.Color = plotutil.Color(s.style)
		l.Width = vg.Points(1.5)
		pts.Color = plotutil.Color(s.style)
		pts.Shape = plotutil.Shape(s.style)
		pts.Radius = vg.Points(3)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	return nil
}

// integerTicks marks the x axis at the whole numbers from min to max.
type integerTicks struct{}

func (integerTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	step := math.Max(1, math.Ceil((max-min)/12))
	for x := math.Ceil(min); x <= max; x += step {
		ts = append(ts, plot.Tick{Value: x, Label: fmt.Sprint(x)})
	}
	return ts
}

// padX widens the x range of a plot by half a unit on each side, so that
// glyphs at whole numbers do not sit on the frame.
func padX(p *plot.Plot) {
	p.X.Min -= 0.5
	p.X.Max += 0.5
}

// renderPNG draws one plot as PNG bytes.
func renderPNG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi))
	p.Draw(draw.New(c))
	return encodePNG(c)
}

// encodePNG encodes a canvas favouring speed over size: plots are mostly
// flat colour and compress well anyway.
func encodePNG(c *vgimg.Canvas) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, c.Image()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// renderGrid draws plots as a grid of tiles, each w x h; nil plots leave
// their tile empty.
func renderGrid(plots [][]*plot.Plot, w, h vg.Length) ([]byte, error) {
	rows := len(plots)
	cols := 0
	for _, r := range plots {
		cols = max(cols, len(r))
	}
	for i := range plots {
		for len(plots[i]) < cols {
			plots[i] = append(plots[i], nil)
		}
	}
	c := vgimg.NewWith(vgimg.UseWH(w*vg.Length(cols), h*vg.Length(rows)), vgimg.UseDPI(dpi))
	dc := draw.New(c)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 3,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, t, dc)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	return encodePNG(c)
}

// stackedBars adds bars of the given heights stacked on each other at x =
// 0, 1, ...: one layer per element of layers, named by names.
func stackedBars(p *plot.Plot, layers [][]float64, names []string, width vg.Length) error {
	var below *plotter.BarChart
	for i, vs := range layers {
		b, err := plotter.NewBarChart(plotter.Values(vs), width)
		if err != nil {
			return err
		}
		b.LineStyle.Width = 0
		b.Color = barColors[i%len(barColors)]
		if below != nil {
			b.StackOn(below)
		}
		p.Add(b)
		p.Legend.Add(names[i], b)
		below = b
	}
	return nil
}

// groupedBars adds one bar chart per group at x = 0, 1, ..., side by side.
func groupedBars(p *plot.Plot, groups [][]float64, names []string, width vg.Length) error {
	n := len(groups)
	for i, vs := range groups {
		b, err := plotter.NewBarChart(plotter.Values(vs), width)
		if err != nil {
			return err
		}
		b.LineStyle.Width = 0
		b.Color = plotutil.Color(i)
		b.Offset = width * vg.Length(float64(i)-float64(n-1)/2)
		p.Add(b)
		p.Legend.Add(names[i], b)
	}
	return nil
}

// barColors: training, waiting, the rest.
var barColors = []color.Color{
	color.RGBA{R: 46, G: 125, B: 50, A: 255},
	color.RGBA{R: 239, G: 108, B: 0, A: 255},
	color.RGBA{R: 176, G: 176, B: 176, A: 255},
}

// panelTag names the i-th group of a plot's panels, 0-based, as its
// section in report.md does: (a), (b), ..., (z), (27), ...
func panelTag(i int) string {
	if i < 26 {
		return "(" + string(rune('a'+i)) + ")"
	}
	return fmt.Sprintf("(%d)", i+1)
}
