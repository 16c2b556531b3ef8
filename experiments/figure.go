package experiments

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot/vg"
)

// SpeedupFigure draws the README's figure from the sweep.csv of sweeps
// that vary cluster.local_slaves (experiments/machines.yaml and the like):
// the speed-up of pipelined pre-training over the sweep's greedy run on one
// machine, against the machines, beside greedy (which trains one RBM at a
// time, so more machines leave it where it is) and the ideal. Each sweep is
// one line, named by its sweep config (experiments/<folder>.yaml). The
// figure is a PNG, drawn with the plot's own fonts so that it looks the
// same wherever it is shown.
func SpeedupFigure(dirs []string) ([]byte, error) {
	p := newPlot("Pre-training speed-up over greedy on one machine", "machines", "speed-up", false)
	p.X.Tick.Marker = integerTicks{}
	var ss []series
	most := 1.0
	for i, dir := range dirs {
		xs, ys, err := sweepSpeedups(filepath.Join(dir, "sweep.csv"))
		if err != nil {
			return nil, err
		}
		most = max(most, slices.Max(xs))
		ss = append(ss, series{name: "pipelined, experiments/" + filepath.Base(dir) + ".yaml", xs: xs, ys: ys, style: i})
	}
	ss = append(ss,
		series{name: "greedy", xs: []float64{1, most}, ys: []float64{1, 1}, style: len(dirs)},
		series{name: "ideal", xs: []float64{1, most}, ys: []float64{1, most}, dashed: true})
	if err := addSeries(p, ss); err != nil {
		return nil, err
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(12), -vg.Points(6)
	p.Y.Tick.Marker = integerTicks{}
	p.Y.Min, p.Y.Max = 0, most
	padX(p)
	return renderPNG(p, 6*vg.Inch, 4*vg.Inch)
}

// sweepSpeedups reads a sweep.csv: the machines of each finished pipelined
// run (cluster.local_slaves) and its speed-up over the finished greedy run.
func sweepSpeedups(path string) (xs, ys []float64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) < 2 {
		return nil, nil, fmt.Errorf("%s: no runs", path)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"cluster.local_slaves", "mode", "status", "pretrain_seconds"} {
		if _, ok := col[h]; !ok {
			return nil, nil, fmt.Errorf("%s: no column %s: want a sweep of cluster.local_slaves", path, h)
		}
	}
	greedy := 0.0
	type point struct{ machines, seconds float64 }
	var pts []point
	for _, r := range recs[1:] {
		if r[col["status"]] != "ok" {
			continue
		}
		secs, err := strconv.ParseFloat(r[col["pretrain_seconds"]], 64)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: pretrain_seconds %q: %w", path, r[col["pretrain_seconds"]], err)
		}
		if r[col["mode"]] == "greedy" {
			greedy = secs
			continue
		}
		m, err := strconv.ParseFloat(r[col["cluster.local_slaves"]], 64)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: cluster.local_slaves %q: %w", path, r[col["cluster.local_slaves"]], err)
		}
		pts = append(pts, point{m, secs})
	}
	if greedy == 0 || len(pts) == 0 {
		return nil, nil, fmt.Errorf("%s: want a finished greedy run and pipelined runs", path)
	}
	slices.SortFunc(pts, func(a, b point) int { return int(a.machines - b.machines) })
	for _, pt := range pts {
		xs, ys = append(xs, pt.machines), append(ys, greedy/pt.seconds)
	}
	return xs, ys, nil
}
