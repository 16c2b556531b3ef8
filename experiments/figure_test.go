package experiments

import (
	"bytes"
	"image/png"
	"os"
	"testing"
)

// TestSpeedupFigure draws the README's figure from the committed sweeps
// and checks it is the PNG that docs/ holds, so that the picture cannot
// drift from its command and data.
func TestSpeedupFigure(t *testing.T) {
	got, err := SpeedupFigure([]string{"results/machines", "results/machines8"})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(got))
	if err != nil {
		t.Fatalf("SpeedupFigure: not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 300 {
		t.Errorf("SpeedupFigure: %dx%d pixels; want at least 400x300", b.Dx(), b.Dy())
	}
	want, err := os.ReadFile("../docs/speedup.png")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/speedup.png differs from what the committed sweeps draw: run go run ./experiments/speedup -out docs/speedup.png experiments/results/machines experiments/results/machines8")
	}
}

// TestSpeedupFigureNeedsSweeps checks that a folder without a sweep.csv
// is an error naming it.
func TestSpeedupFigureNeedsSweeps(t *testing.T) {
	if _, err := SpeedupFigure([]string{t.TempDir()}); err == nil {
		t.Error("SpeedupFigure(an empty folder) = nil error; want one naming its sweep.csv")
	}
}
